"""Audit bundles of campaigns: export from the database, import into an empty install.

    records.py   model rows ↔ records, every column accounted for
    sections/    one exporter/importer per model family, registered in dependency order
    exporter.py  export_bundle / stream_archive (one read-only database snapshot)
    importer.py  import_bundle (format check, verify, plan, one transaction)

The format itself, its archive readers and writers and the verifier are Django-free and live in
``harness.bundle``.  docs/bundles.md describes every file and field.
"""
