"""Run the sandbox conformance suite on this machine and print a pass/fail table per backend."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

BACKENDS = ("docker", "bwrap")


class _Collector:
    """pytest plugin gathering outcome per (check, backend)."""

    def __init__(self) -> None:
        self.results: dict[str, dict[str, str]] = {}
        self.failures: list[str] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call" and not (report.when == "setup" and report.outcome != "passed"):
            return
        name = report.nodeid.split("::")[-1]
        m = re.match(r"^(test_\w+?)(?:\[(.*)\])?$", name)
        check, params = (m.group(1), m.group(2) or "") if m else (name, "")
        found = [b for b in BACKENDS if b in params.split("-")]
        backend = found[0] if found else ("docker" if "docker" in check else "both")
        extra = "-".join(p for p in params.split("-") if p not in BACKENDS)
        label = check.removeprefix("test_").replace("_", " ") + (f" [{extra}]" if extra else "")
        row = self.results.setdefault(label, {})
        outcome = report.outcome if report.when == "call" else "error"
        previous = row.get(backend)
        row[backend] = "failed" if "failed" in (previous, outcome) or outcome == "error" else outcome
        if report.outcome != "passed":
            self.failures.append(f"{label} ({backend}): {report.longreprtext.strip().splitlines()[-1:]}")


class Command(BaseCommand):
    help = "Run the sandbox conformance checks (both backends) and print a pass/fail table."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--backend", choices=BACKENDS, help="check only this backend")
        parser.add_argument(
            "--with-sigkill", action="store_true", help="also run the 50-run SIGKILL/reaper check (slow)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        tests = Path(settings.BASE_DIR) / "tests" / "sandbox"
        targets = [str(tests / "test_conformance.py")]
        if options["with_sigkill"]:
            targets.append(str(tests / "test_sigkill_reaper.py"))
        argv = [*targets, "-q", "-p", "no:cacheprovider", "-p", "no:django", "--no-header", "-o", "addopts="]
        argv += ["-W", "ignore::pytest.PytestConfigWarning"]  # DJANGO_SETTINGS_MODULE without the plugin
        if options["backend"]:
            other = next(b for b in BACKENDS if b != options["backend"])
            argv += ["-k", f"not {other}"]
        collector = _Collector()
        self.stdout.write("running the conformance suite (about a minute)...")
        code = pytest.main(argv, plugins=[collector])
        if not collector.results:
            raise CommandError(f"no checks ran (pytest exit code {code})")
        width = max(len(k) for k in collector.results)
        self.stdout.write(f"\n{'check'.ljust(width)}  {'docker':8}{'bwrap':8}")
        self.stdout.write("-" * (width + 18))
        for label in sorted(collector.results):
            row = collector.results[label]
            cells = []
            for backend in BACKENDS:
                outcome = row.get(backend) or row.get("both") or "-"
                cells.append(outcome.replace("passed", "pass").replace("failed", "FAIL").ljust(8))
            self.stdout.write(f"{label.ljust(width)}  {''.join(cells)}")
        if collector.failures:
            self.stdout.write("")
            for line in collector.failures:
                self.stdout.write(self.style.ERROR(line))
            raise CommandError(f"{len(collector.failures)} check(s) failed")
        self.stdout.write(self.style.SUCCESS("\nall checks passed"))
