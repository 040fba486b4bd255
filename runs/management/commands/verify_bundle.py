"""Check an audit bundle: every file against the manifest, the manifest against ROOT, every run's chain.

    manage.py verify_bundle var/bundles/c12 [--root HASH]

Prints every problem (a missing, extra or altered file with its path; a broken chain with the
run's uuid and the first bad step) and exits 1 if there is any; exits 0 with a summary otherwise.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from harness.bundle.archive import DEFAULT_LIMITS, MB, Limits
from harness.bundle.verify import verify


def add_limit_arguments(parser: CommandParser) -> None:
    """What reading the bundle may cost before it is refused (harness.bundle.archive.Limits)."""
    d = DEFAULT_LIMITS
    parser.add_argument("--max-file-mb", type=int, default=d.max_file_bytes // MB, help="largest file accepted (MB)")
    parser.add_argument("--max-total-mb", type=int, default=d.max_total_bytes // MB, help="all files together (MB)")
    parser.add_argument(
        "--max-ratio", type=int, default=d.max_ratio, help="inflated : compressed bytes an archive may reach"
    )


def limits_from(opts: dict[str, Any]) -> Limits:
    for name in ("max_file_mb", "max_total_mb", "max_ratio"):
        if opts[name] < 1:
            raise CommandError(f"--{name.replace('_', '-')} must be a positive number, got {opts[name]}")
    return Limits(
        max_file_bytes=opts["max_file_mb"] * MB,
        max_total_bytes=opts["max_total_mb"] * MB,
        max_ratio=opts["max_ratio"],
    )


class Command(BaseCommand):
    help = "Verify an audit bundle (directory or .tar.gz); exit 1 on any problem."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path)
        parser.add_argument("--root", default="", help="The published root hash the bundle must have.")
        add_limit_arguments(parser)

    def handle(self, *args: Any, **opts: Any) -> None:
        report = verify(opts["path"], expected_root=opts["root"].strip(), limits=limits_from(opts))
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
