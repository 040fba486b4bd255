"""Audit bundles: export campaigns to a self-contained, tamper-evident bundle; verify; import.

    format.py    the format: version rule, manifest + root hash, per-run hash chain (pure)
    archive.py   directory and streamed .tar.gz writers and readers (pure)
    verify.py    the verifier: every missing, extra or altered file, every broken chain (pure)
    records.py   model rows ↔ records, every column accounted for
    sections/    one exporter/importer per model family, registered in dependency order
    exporter.py  export_bundle / stream_archive (one read-only database snapshot)
    importer.py  import_bundle (format check, verify, plan, one transaction)

docs/bundles.md describes every file and field.
"""
