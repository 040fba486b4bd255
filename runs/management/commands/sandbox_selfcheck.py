"""Check the sandbox backends on this machine and print a pass/fail table (escape probes included).

Needs only the runtime requirements (``make install``): the checks live in
``harness.sandbox.selfcheck``, not in the pytest suite.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from harness.sandbox import selfcheck


class Command(BaseCommand):
    help = "Run the sandbox self-check (both backends, escape probes included) and print a table."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--backend", choices=selfcheck.BACKENDS, help="check only this backend")

    def handle(self, *args: Any, **options: Any) -> None:
        backends = [options["backend"]] if options["backend"] else list(selfcheck.BACKENDS)
        self.stdout.write(f"checking {', '.join(backends)} ({len(selfcheck.CHECKS)} checks each, a few minutes)...")
        width = max(len(name) for name in selfcheck.CHECKS)
        failures: list[selfcheck.CheckResult] = []
        for backend in backends:
            self.stdout.write(f"\n{backend}")
            self.stdout.write("-" * (width + 16))
            for result in selfcheck.run([backend]):
                if result.check.startswith("probe "):
                    verdict = "blocked" if result.ok else "ESCAPED"
                else:
                    verdict = "pass" if result.ok else "FAIL"
                line = f"{result.check.ljust(width)}  {verdict:8}{result.seconds:5.1f}s"
                self.stdout.write(line if result.ok else self.style.ERROR(line))
                if not result.ok:
                    failures.append(result)
        if failures:
            self.stdout.write("")
            for r in failures:
                self.stdout.write(self.style.ERROR(f"{r.check} ({r.backend}): {r.detail}"))
            raise CommandError(f"{len(failures)} check(s) failed")
        self.stdout.write(
            self.style.SUCCESS("\nall checks passed; every escape probe blocked on " + ", ".join(backends))
        )
