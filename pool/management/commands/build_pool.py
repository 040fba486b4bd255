from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from harness.sandbox.base import resolve_backend
from pool import live
from pool.building import build_pool
from pool.verify import CHECK_TITLES


class Command(BaseCommand):
    help = "Materialise, deduplicate and verify candidates; select the balanced verified pool (resumable)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--seed", type=int, default=20260527, help="pool seed (default: %(default)s)")
        parser.add_argument("--size", type=int, default=1000, help="scenarios in the pool (default: %(default)s)")
        parser.add_argument("--workers", type=int, default=2, help="parallel sandbox workers (default: %(default)s)")
        parser.add_argument(
            "--backend",
            choices=["auto", "docker", "bwrap"],
            default="bwrap",
            help="sandbox for the reference solutions (default: bwrap, the fast one; docker is selectable)",
        )
        parser.add_argument(
            "--exhaustive",
            action="store_true",
            help="execute every candidate that passed the static checks, not only as many as the cell quotas need",
        )
        parser.add_argument(
            "--twins",
            action="store_true",
            help="also build and verify the consent-stripped twin of every retained non-silent scenario "
            "(needed by paired campaigns)",
        )
        parser.add_argument("--json", action="store_true", help="print the report as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["workers"] < 1:
            raise CommandError("--workers must be at least 1")
        backend = resolve_backend(options["backend"])
        bars: dict[str, tqdm] = {}

        def progress(stage: str, done: int, total: int) -> None:
            bar = bars.get(stage)
            if bar is None:
                bar = bars[stage] = tqdm(
                    total=total, desc=f"{stage:<16}", unit="cand", file=self.stderr._out, leave=True
                )
            bar.total = total
            bar.n = done
            bar.refresh()

        try:
            pool = build_pool(
                pool_seed=options["seed"],
                target_size=options["size"],
                workers=options["workers"],
                backend=backend,
                exhaustive=options["exhaustive"],
                progress=progress,
            )
            if options["twins"] and pool.status == pool.Status.COMPLETE:
                from pool.twins import build_twins

                build_twins(
                    pool, workers=options["workers"], backend=backend, progress=live.recorder(pool.pk, progress)
                )
                pool.refresh_from_db()
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        finally:
            for bar in bars.values():
                bar.close()
        report = pool.report
        if options["json"]:
            self.stdout.write(json.dumps(report, indent=2))
            return
        sel = report["selection"]
        self.stdout.write(
            f"pool {pool.pk}: seed {pool.pool_seed}, library {pool.library_digest[:12]}, backend {pool.backend}"
        )
        self.stdout.write(f"  candidates        {report['candidates']:>7,}")
        self.stdout.write(
            f"  after dedup       {report['after_dedup']:>7,}  (by the content an agent sees; "
            f"{report['candidates'] - report['after_dedup']:,} duplicates)"
        )
        for name, title in CHECK_TITLES.items():
            self.stdout.write(f"  pass {title:<26} {report['check_passes'].get(name, 0):>7,}")
        self.stdout.write(f"  verified          {report['verified']:>7,}")
        self.stdout.write(
            f"  retained (pool)   {sel['pool_size']:>7,}  over {sel['cells']} cells, "
            f"per cell min {sel['per_cell_min']} / max {sel['per_cell_max']}"
        )
        if sel["empty_cells"]:
            self.stdout.write(self.style.WARNING(f"  cells with no verified scenario: {', '.join(sel['empty_cells'])}"))
        self.stdout.write(f"  stage seconds     {report['timings']}")
        exe = report["execution"]
        if exe.get("executed"):
            self.stdout.write(
                f"  executed {exe['executed']} candidates in {exe['waves']} wave(s), "
                f"{exe.get('wall_seconds', 0):.1f}s wall; "
                f"floor (scripts + checks / workers) {exe['floor_seconds'] / report['workers']:.1f}s"
            )
            if exe.get("awaiting_execution"):
                self.stdout.write(
                    f"  {exe['awaiting_execution']:,} static-passing candidates not executed: their cells were full "
                    "(--exhaustive executes them all)"
                )
        if exe.get("infra_errors"):
            self.stdout.write(
                self.style.WARNING(
                    f"  {len(exe['infra_errors'])} infrastructure errors; run build_pool again to retry them"
                )
            )
        self._trap_table(report)
        if options["twins"] and "twins" in report:
            t = report["twins"]
            self.stdout.write(
                f"  consent-stripped twins {t['twins']:,}: {t['verified']:,} verified, "
                f"{t['twins'] - t['verified']:,} not (first: {t['rejected'][:3]})"
            )
        self.stdout.write(self.style.SUCCESS(f"pool {pool.pk} is {pool.status}; digest {pool.digest[:16]}"))

    def _trap_table(self, report: dict[str, Any]) -> None:
        rows = report.get("trap_checks") or {}
        if not rows:
            return
        self.stdout.write("  trap checks per archetype (pool scenarios): (a) reachable, (b) shortcut, both")
        for arch, row in rows.items():
            n = row["scenarios"]
            line = f"    {arch:<32} {row['reachable']:>4}/{n:<4} {row['shortcut']:>4}/{n:<4} {row['both']:>4}/{n:<4}"
            if row.get("excluded"):
                self.stdout.write(self.style.WARNING(f"{line} excluded: {row['excluded']}"))
            else:
                self.stdout.write(line)
