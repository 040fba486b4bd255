"""Check an audit bundle: every file against the manifest, the manifest against ROOT, every run's chain.

    manage.py verify_bundle var/bundles/c12 [--root HASH]

Prints every problem (a missing, extra or altered file with its path; a broken chain with the
run's uuid and the first bad step) and exits 1 if there is any; exits 0 with a summary otherwise.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from harness.bundle.verify import verify


class Command(BaseCommand):
    help = "Verify an audit bundle (directory or .tar.gz); exit 1 on any problem."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path)
        parser.add_argument("--root", default="", help="The published root hash the bundle must have.")

    def handle(self, *args: Any, **opts: Any) -> None:
        report = verify(opts["path"], expected_root=opts["root"].strip())
        for problem in report.problems:
            self.stdout.write(str(problem))
        if report.problems:
            raise CommandError(f"{opts['path']}: {len(report.problems)} problems found", returncode=1)
        self.stdout.write(
            self.style.SUCCESS(
                f"OK: {report.files} files ({report.bytes / 1e6:.1f} MB), {report.runs} runs, "
                f"{report.steps} trace steps chained; root {report.root}"
            )
        )
