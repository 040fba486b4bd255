"""Agents under test: adapters that run an agent framework inside a sandbox (SPEC §6).

``base`` holds the adapter interface and registry, ``events`` the common event list,
``runner.run_agent`` one end-to-end run (gateway grant → sandbox → agent → evidence → verdict
and validity).  ``shell_agent`` and ``connect`` are stdlib-only programs copied into sandboxes.
"""
