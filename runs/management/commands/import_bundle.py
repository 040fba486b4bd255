"""Import an audit bundle into this install: its campaigns, runs, evidence, labels and what they used.

    manage.py import_bundle var/bundles/c12.tar.gz

Refuses an incompatible format version, a bundle that fails verification, and conflicts with this
install's records (a framework, model or SUT slug with another configuration, a different
campaign of the same name).  All or nothing; a second import of the same bundle changes nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from harness.bundle.format import BundleError
from runs.bundle.importer import import_bundle
from runs.management.commands.verify_bundle import add_limit_arguments, limits_from


class Command(BaseCommand):
    help = "Import an audit bundle (directory or .tar.gz); all or nothing, idempotent."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path)
        add_limit_arguments(parser)

    def handle(self, *args: Any, **opts: Any) -> None:
        try:
            report = import_bundle(opts["path"], limits=limits_from(opts))
        except BundleError as exc:
            raise CommandError(str(exc)) from None
        for warning in report.warnings:
            self.stderr.write(f"warning: {warning}")
        if not report.changed:
            self.stdout.write(
                self.style.SUCCESS(
                    f"nothing changed: all {report.present['campaigns']} campaigns of this bundle are already here, "
                    f"identical (root {report.root})"
                )
            )
            return
        created = ", ".join(f"{k} {v}" for k, v in sorted(report.created.items()) if v)
        present = ", ".join(f"{k} {v}" for k, v in sorted(report.present.items()) if v)
        self.stdout.write(f"created: {created}")
        if present:
            self.stdout.write(f"already here: {present}")
        ids = ", ".join(str(pk) for pk in report.campaigns.values())
        self.stdout.write(
            self.style.SUCCESS(
                f"imported campaigns {ids} in {report.seconds:.1f} s (verify {report.verify_seconds:.1f} s); "
                f"root {report.root}"
            )
        )
