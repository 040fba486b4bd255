"""The audit-bundle format, Django-free: what a bundle is and how it is checked.

    format.py    the format: version rule, manifest + root hash, per-run hash chain
    archive.py   directory and streamed .tar.gz writers and readers
    verify.py    the verifier: every missing, extra or altered file, every broken chain

Writing a bundle from the database and importing one into it is ``runs.bundle``'s job.
docs/bundles.md describes every file and field.
"""
