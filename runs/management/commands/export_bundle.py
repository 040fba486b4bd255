"""Export finished campaigns (or a matrix) to an audit bundle: a directory or a .tar.gz.

    manage.py export_bundle --campaign 12 --out var/bundles/c12
    manage.py export_bundle --matrix planted-matrix --out var/bundles/matrix.tar.gz

A campaign or matrix is named by id, uuid or name.  The root hash printed last is what to publish
beside the results: ``verify_bundle PATH --root HASH`` checks a copy against it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from harness.bundle.format import BundleError
from runs.bundle.exporter import export_bundle, resolve


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


class Command(BaseCommand):
    help = "Export campaigns or a matrix to a self-contained, verifiable audit bundle."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--campaign", action="append", default=[], help="Campaign id, uuid or name (repeatable).")
        parser.add_argument("--matrix", help="Matrix id, uuid or name: all of its campaigns.")
        parser.add_argument("--out", required=True, type=Path, help="New directory, or a file ending .tar.gz.")
        parser.add_argument(
            "--archive", action="store_true", help="Write a .tar.gz even if --out does not end in .tar.gz."
        )
        parser.add_argument("--compress-level", type=int, default=6, choices=range(1, 10), metavar="1-9")

    def handle(self, *args: Any, **opts: Any) -> None:
        try:
            scope = resolve(opts["campaign"], opts["matrix"])
            result = export_bundle(
                scope, opts["out"], archive=True if opts["archive"] else None, compresslevel=opts["compress_level"]
            )
        except BundleError as exc:
            raise CommandError(str(exc)) from None
        for warning in result.warnings:
            self.stderr.write(f"warning: {warning}")
        counts = ", ".join(f"{k} {v}" for k, v in sorted(result.counts.items()))
        self.stdout.write(f"{counts}")
        self.stdout.write(
            f"bundle {result.path}: {_mb(result.size)} on disk, {_mb(result.bytes)} of files, {result.seconds:.1f} s"
        )
        self.stdout.write(self.style.SUCCESS(f"root {result.root}"))
