"""Fixtures for the dashboard tests: private cache and channel prefixes, evidence dir, axes."""

from __future__ import annotations
