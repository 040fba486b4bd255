"""Adapters of real agent CLIs (installed in their own Docker image layers, run in the sandbox)."""
