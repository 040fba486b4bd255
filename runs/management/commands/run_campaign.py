"""Start (or resume) a campaign for one SUT or a frameworks × models matrix, and follow it.

    manage.py run_campaign --sut shell:scripted-demo --n 50
    manage.py run_campaign --frameworks sim-alpha,sim-beta --models sim-m1,sim-m2 --n 40 --simulate
    manage.py run_campaign --name my-campaign            # resume / watch an existing one
    manage.py run_campaign --name my-campaign --blind-progress  # watch without seeing a verdict
    manage.py run_campaign --sut mini-swe-agent:local-qwen --n 20 --max-steps 15 --wall-limit 900
    manage.py run_campaign --sut shell:scripted-demo --kind pack --pack examples --repeats 2
    manage.py run_campaign --sut shell:scripted-demo --kind pack-adaptive --pack examples --n 40
    manage.py run_campaign --sut claude-code:sonnet --n 200 --dry-run            # the cost estimate only
    manage.py run_campaign --sut claude-code:sonnet --n 200 --pilot 6 --cost-cap 25
    manage.py run_campaign --name my-campaign --cost-cap 40                    # resume above a raised cap

The command is a coordinator that can be interrupted at any time: campaigns live in the database
and are identified by name, so running the same command again resumes them where they stood.
Runs execute on rq workers — ``--workers N`` starts N local ones for the command's lifetime;
``--workers 0`` relies on workers started elsewhere (``manage.py rqworker`` on any machine sharing
the database and Redis).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from harness.procutil import die_with_parent
from runs import costs, stats
from runs.campaigns import (
    CampaignError,
    campaign_params,
    command_queue,
    plan_of,
    reconcile,
    resume_campaign,
    resume_matrix,
    route_campaigns,
    start_campaign,
    start_matrix,
)
from runs.costs import estimate_lines
from runs.models import PACK_KINDS, AgentFramework, Campaign, CampaignKind, Matrix, ModelEndpoint, SystemUnderTest


class Command(BaseCommand):
    help = "Start or resume a campaign (single SUT or a frameworks × models matrix) and show its progress."

    # --blind-progress: the output names no verdict (set by handle; the default for direct calls).
    blind = False

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--name", help="Campaign (or matrix) name; an existing one is resumed.")
        parser.add_argument("--sut", help="FRAMEWORK:MODEL (slugs) for a single-SUT campaign.")
        parser.add_argument("--frameworks", help="Comma-separated framework slugs (matrix).")
        parser.add_argument("--models", help="Comma-separated model slugs (matrix).")
        parser.add_argument("--kind", default=CampaignKind.SNARE, choices=[k.value for k in CampaignKind])
        parser.add_argument("--pool", type=int, help="Pool id (default: the newest complete pool).")
        parser.add_argument("--pack", help="Scenario pack id (kinds pack, pack-adaptive): its newest imported version.")
        parser.add_argument(
            "--repeats", type=int, help="Kind pack: runs per scenario variant (n = R × the pack's variants; default 1)."
        )
        parser.add_argument("--n", type=int, help="Budget of scored runs per SUT (default 500).")
        parser.add_argument("--k", type=int, help="Slots per round (default 10).")
        parser.add_argument("--j", type=int, help="Concurrent sandboxes (default 3).")
        parser.add_argument("--q-floor", type=int, dest="q_floor")
        parser.add_argument("--q-ceil", type=int, dest="q_ceil")
        parser.add_argument("--seed", type=int, help="Campaign seed (default 0).")
        parser.add_argument("--max-attempts", type=int, dest="max_attempts")
        parser.add_argument(
            "--uniform-share",
            type=float,
            dest="uniform_share",
            help="Share of slots drawn uniformly over cells, the uniform-mix rate's sample (default 0.2; 0: none).",
        )
        parser.add_argument("--backend", default=settings.SANDBOX_BACKEND, choices=["auto", "docker", "bwrap"])
        parser.add_argument(
            "--simulate",
            action="store_true",
            help="Create missing frameworks/models as simulated ones (stochastic agent, no model).",
        )
        parser.add_argument("--simulation", type=Path, help="JSON file with the planted truth for simulated agents.")
        limits = parser.add_argument_group(
            "per-run limits of the system under test (--sut/--frameworks × --models; applied to the SUT)"
        )
        for flag, field, what in LIMIT_FLAGS:
            limits.add_argument(flag, type=int, dest=field, help=what)
        parser.add_argument(
            "--workers",
            type=int,
            help="Local rq workers to start (default: j, or 1 when a model is served on this machine; 0 = none).",
        )
        costs_group = parser.add_argument_group('costs (docs/campaigns.md, "Costs and caps")')
        costs_group.add_argument(
            "--cost-cap",
            type=Decimal,
            help="USD per campaign: no run is issued that could cross it. With --name of a campaign a cost cap"
            " stopped: raise the cap and resume it.",
        )
        costs_group.add_argument(
            "--matrix-cost-cap",
            type=Decimal,
            help="USD for a whole matrix. With --name of a matrix: raise it and resume its capped campaigns.",
        )
        costs_group.add_argument(
            "--run-token-cap",
            type=int,
            help="Tokens per run: the gateway ends a run there (tighter of this and the SUT's).",
        )
        costs_group.add_argument(
            "--dry-run",
            action="store_true",
            help="Print the cost estimate (runs × median cost per run) and start nothing.",
        )
        costs_group.add_argument(
            "--pilot",
            type=int,
            metavar="N",
            help="First run a pilot campaign of N runs on each system, so the estimate has runs to go on.",
        )
        parser.add_argument("--no-wait", action="store_true", help="Start and return without following.")
        parser.add_argument("--timeout", type=float, default=0, help="Give up following after this many seconds.")
        parser.add_argument(
            "--blind-progress",
            action="store_true",
            dest="blind_progress",
            help="Progress without verdicts, for a validator watching (docs/labels.md): per-run lines say "
            "whether a run is valid but not what the oracle decided, and neither the bar nor the final "
            "report counts overeager runs.",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        self.blind = bool(opts.get("blind_progress"))
        try:
            campaigns = self._campaigns(opts)
        except CampaignError as exc:
            raise CommandError(str(exc)) from None
        if opts["dry_run"]:
            return
        if opts["no_wait"]:
            for c in campaigns:
                self.stdout.write(f"campaign {c.pk} {c.name}: {c.status}")
            return
        workers = opts["workers"]
        if workers is None:
            workers = self._default_workers(campaigns)
        self._serve([c.pk for c in campaigns], workers, opts["timeout"])
        self._report([c.pk for c in campaigns])

    def _serve(self, ids: list[int], workers: int, timeout: float) -> None:
        """Follow the campaigns to their end, with ``workers`` local workers of their own.

        With local workers the campaigns' jobs go to a queue only those workers read, so a second
        command at the same time runs its own jobs on its own workers and each command's worker
        count bounds its concurrency; when the command stops (done, timed out, interrupted) they
        go back to the install's runs queue for any worker. ``--workers 0`` leaves them there.
        """
        queue = command_queue() if workers > 0 else ""
        if queue:
            route_campaigns(ids, queue)
        procs = start_workers(workers, queue)
        try:
            self._follow(ids, timeout)
        finally:
            stop_workers(procs)
            if queue:
                route_campaigns(ids, "", only_from=queue)

    # -- creating or finding the campaigns ------------------------------------------------------

    def _campaigns(self, opts: dict[str, Any]) -> list[Campaign]:
        name = opts["name"]
        if name and not (opts["sut"] or opts["frameworks"]):
            matrix = Matrix.objects.filter(name=name).first()
            if matrix is not None:
                if opts["matrix_cost_cap"] is not None or opts["cost_cap"] is not None:
                    resumed = resume_matrix(matrix.pk, cost_cap=opts["matrix_cost_cap"])
                    self.stdout.write(f"matrix {name!r}: {len(resumed)} capped campaign(s) resumed")
                return list(matrix.campaigns.order_by("pk"))
            campaign = Campaign.objects.filter(name=name).first()
            if campaign is None:
                raise CampaignError(f"no campaign or matrix named {name!r}; give --sut or --frameworks/--models")
            if opts["cost_cap"] is not None and campaign.stop_reason:
                campaign = resume_campaign(campaign.pk, cost_cap=opts["cost_cap"])
                self.stdout.write(
                    f"resumed campaign {campaign.pk} {name!r} with a cost cap of {campaign.cost_cap_usd} USD"
                )
            return [campaign]
        simulation = self._simulation(opts)
        pack_pool = self._pack_pool(opts) if opts["kind"] in PACK_KINDS else None
        if opts["kind"] == CampaignKind.PACK and pack_pool is not None:
            if opts["n"] is not None and opts["repeats"] is not None:
                raise CampaignError("give --repeats or --n for a pack campaign, not both")
            if opts["n"] is None:
                opts["n"] = max(1, opts["repeats"] or 1) * pack_pool.candidates.in_pool().count()
        params = campaign_params(
            n=opts["n"],
            k=opts["k"],
            j=opts["j"],
            q_floor=opts["q_floor"],
            q_ceil=opts["q_ceil"],
            seed=opts["seed"],
            max_attempts=opts["max_attempts"],
            uniform_share=opts["uniform_share"],
        )
        pool = self._pool(opts["pool"]) if opts["kind"] in (CampaignKind.SNARE, CampaignKind.PAIRED) else pack_pool
        if opts["dry_run"] or opts["pilot"]:
            suts = self._suts(opts)
            if opts["pilot"]:
                self._pilot(suts, opts, pool, simulation)
            for line in estimate_lines(suts, opts["kind"], params):
                self.stdout.write(line)
            if opts["dry_run"]:
                return []
        if opts["sut"]:
            fw_slug, _, model_slug = str(opts["sut"]).partition(":")
            if not model_slug:
                raise CampaignError("--sut takes FRAMEWORK:MODEL, e.g. --sut shell:scripted-demo")
            sut = self._sut(fw_slug, model_slug, opts["simulate"], _limits(opts))
            prefix = sut.slug
            if pack_pool is not None:  # not to resume a pool campaign of the same SUT and budget
                prefix += f"-{opts['kind']}-{pack_pool.pack_info['slug']}"
            name = name or f"{prefix}-seed{params['seed']}-n{params['n']}"
            existing = Campaign.objects.filter(name=name).first()
            if existing is not None:
                self.stdout.write(f"resuming campaign {existing.pk} {name!r} ({existing.status})")
                if opts["cost_cap"] is not None and existing.stop_reason:
                    existing = resume_campaign(existing.pk, cost_cap=opts["cost_cap"])
                    self.stdout.write(f"cost cap raised to {existing.cost_cap_usd} USD: {existing.status}")
                return [existing]
            return [
                start_campaign(
                    name=name,
                    sut=sut,
                    pool=pool,
                    params=params,
                    backend=opts["backend"],
                    kind=opts["kind"],
                    simulation=simulation,
                    cost_cap=opts["cost_cap"],
                    run_token_cap=opts["run_token_cap"],
                )
            ]
        if not (opts["frameworks"] and opts["models"]):
            raise CampaignError("give --sut FRAMEWORK:MODEL, or --frameworks and --models for a matrix")
        frameworks = [s.strip() for s in str(opts["frameworks"]).split(",") if s.strip()]
        models = [s.strip() for s in str(opts["models"]).split(",") if s.strip()]
        name = name or f"matrix-{'-'.join(frameworks)}-x-{'-'.join(models)}-seed{params['seed']}"
        return start_matrix(
            name,
            [self._sut(f, m, opts["simulate"], _limits(opts)) for f in frameworks for m in models],
            frameworks=frameworks,
            models=models,
            pool=pool,
            params=params,
            backend=opts["backend"],
            kind=opts["kind"],
            simulation=simulation,
            out=self.stdout.write,
            cost_cap=opts["cost_cap"],
            matrix_cost_cap=opts["matrix_cost_cap"],
            run_token_cap=opts["run_token_cap"],
        )

    def _suts(self, opts: dict[str, Any]) -> list[SystemUnderTest]:
        if opts["sut"]:
            fw_slug, _, model_slug = str(opts["sut"]).partition(":")
            if not model_slug:
                raise CampaignError("--sut takes FRAMEWORK:MODEL, e.g. --sut shell:scripted-demo")
            return [self._sut(fw_slug, model_slug, opts["simulate"], _limits(opts))]
        if not (opts["frameworks"] and opts["models"]):
            raise CampaignError("give --sut FRAMEWORK:MODEL, or --frameworks and --models for a matrix")
        frameworks = [s.strip() for s in str(opts["frameworks"]).split(",") if s.strip()]
        models = [s.strip() for s in str(opts["models"]).split(",") if s.strip()]
        return [self._sut(f, m, opts["simulate"], _limits(opts)) for f in frameworks for m in models]

    def _pilot(self, suts: list[SystemUnderTest], opts: dict[str, Any], pool: Any, simulation: dict[str, Any]) -> None:
        """A small campaign per system (seed and kind as asked), followed to its end: its runs are
        the history the estimate reads.  Named ``<system>-pilot-…``, so running it again resumes it."""
        if opts["pilot"] < 1:
            raise CampaignError("--pilot takes a number of runs, at least 1")
        ids = []
        for sut in suts:
            pname = f"{sut.slug}-{opts['kind']}-pilot-seed{opts['seed'] or 0}-n{opts['pilot']}"
            pilot = Campaign.objects.filter(name=pname).first() or start_campaign(
                name=pname,
                sut=sut,
                pool=pool,
                params=campaign_params(n=opts["pilot"], k=opts["pilot"], j=opts["j"], seed=opts["seed"]),
                backend=opts["backend"],
                kind=opts["kind"],
                simulation=simulation,
                run_token_cap=opts["run_token_cap"],
            )
            self.stdout.write(f"pilot campaign {pilot.pk} {pname!r} ({pilot.status})")
            ids.append(pilot.pk)
        workers = opts["workers"] if opts["workers"] is not None else 1
        self._serve(ids, workers, opts["timeout"])
        self._report(ids)

    def _simulation(self, opts: dict[str, Any]) -> dict[str, Any]:
        path = opts["simulation"]
        if path is None:
            return {}
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, ValueError) as exc:
            raise CampaignError(f"--simulation {path}: {exc}") from None
        if not isinstance(data, dict):
            raise CampaignError(f"--simulation {path}: expected a JSON object")
        from harness.agents.stochastic import propensities_from

        try:
            propensities_from(data)
        except (ValueError, TypeError, KeyError) as exc:
            raise CampaignError(f"--simulation {path}: {exc}") from None
        return data

    def _pool(self, pool_id: int | None) -> Any:
        from pool.models import PoolVersion

        pools = PoolVersion.objects.builds().filter(status=PoolVersion.Status.COMPLETE)
        pool = pools.filter(pk=pool_id).first() if pool_id else pools.order_by("-created_at").first()
        if pool is None:
            raise CampaignError("no complete pool" + (f" with id {pool_id}" if pool_id else "") + ": run build_pool")
        return pool

    def _pack_pool(self, opts: dict[str, Any]) -> Any:
        from pool.models import PoolVersion

        if opts["pool"]:
            pool = PoolVersion.objects.packs().filter(pk=opts["pool"]).first()
            if pool is None:
                raise CampaignError(f"pool {opts['pool']} is not a scenario pack's")
            return pool
        if not opts["pack"]:
            raise CampaignError(f"--kind {opts['kind']} needs --pack SLUG (an imported scenario pack)")
        pool = PoolVersion.objects.for_pack(opts["pack"])
        if pool is None:
            raise CampaignError(f"no imported scenario pack {opts['pack']!r}: run `manage.py import_scenarios DIR`")
        return pool

    def _default_workers(self, campaigns: list[Campaign]) -> int:
        if not campaigns:
            return 0
        workers = int(campaigns[0].params.get("j", 3))
        local = sorted({c.sut.model.slug for c in campaigns if serves_locally(c.sut.model)})
        if local and workers > 1:
            # Concurrent runs on one local model queue on its one server and slow every run down
            # (its prompt processing takes the machine's cores): one at a time is faster in total.
            self.stdout.write(f"1 local worker: {', '.join(local)} is served on this machine (--workers N to override)")
            return 1
        return workers

    def _sut(
        self, fw_slug: str, model_slug: str, simulate: bool, limits: dict[str, int] | None = None
    ) -> SystemUnderTest:
        framework = AgentFramework.objects.filter(slug=fw_slug).first()
        model = ModelEndpoint.objects.filter(slug=model_slug).first()
        if simulate:
            framework = framework or AgentFramework.objects.create(
                slug=fw_slug, label=f"{fw_slug} (simulated)", adapter="stochastic"
            )
            model = model or ModelEndpoint.objects.create(
                slug=model_slug, label=f"{model_slug} (simulated)", upstream=ModelEndpoint.Upstream.NONE
            )
        if framework is None:
            raise CampaignError(f"no agent framework {fw_slug!r}: add it in the admin (or pass --simulate)")
        if model is None:
            raise CampaignError(f"no model endpoint {model_slug!r}: add it in the admin (or pass --simulate)")
        return self._configured_sut(framework, model, limits or {})

    def _configured_sut(
        self, framework: AgentFramework, model: ModelEndpoint, limits: dict[str, int]
    ) -> SystemUnderTest:
        """The pair's SUT with the limits asked for — and never silently with defaults: a new SUT's
        limits are printed, and changing a SUT that a running campaign uses is refused."""
        sut = SystemUnderTest.objects.filter(framework=framework, model=model).first()
        if sut is None:
            sut = SystemUnderTest.objects.for_pair(framework, model)
            changed = {k: v for k, v in limits.items() if getattr(sut, k) != v}
            if changed:
                SystemUnderTest.objects.filter(pk=sut.pk).update(**changed)
                sut.refresh_from_db()
            self.stdout.write(
                f"created system under test {sut}: {describe_limits(sut)}"
                + ("" if limits else " (the defaults; set them with --max-steps, --wall-limit, … or in the admin)")
            )
            return sut
        changed = {k: v for k, v in limits.items() if getattr(sut, k) != v}
        if not changed:
            return sut
        busy = list(sut.campaigns.active().values_list("name", flat=True)[:3])
        if busy:
            raise CampaignError(
                f"{sut} is used by running campaign(s) {busy}: its limits cannot change under them"
                f" (asked {changed}); wait, stop them, or change the SUT in the admin"
            )
        SystemUnderTest.objects.filter(pk=sut.pk).update(**changed)
        sut.refresh_from_db()
        self.stdout.write(f"system under test {sut} now: {describe_limits(sut)}")
        return sut

    # -- following ------------------------------------------------------------------------------

    def _follow(self, ids: list[int], timeout: float) -> None:
        from tqdm import tqdm

        total = sum(c.budget for c in Campaign.objects.filter(pk__in=ids))
        started = time.monotonic()
        last_reconcile = 0.0
        seen: set[int] = set()
        with tqdm(total=total, unit="run", desc="scored", file=sys.stderr, dynamic_ncols=True) as bar:
            while True:
                for line in finished_run_lines(ids, seen, blind=self.blind):
                    with tqdm.external_write_mode(file=sys.stderr):  # the bar steps aside for the line
                        self.stdout.write(line)
                rows = list(Campaign.objects.filter(pk__in=ids).values_list("status", "scored", "round", "triggers"))
                scored = sum(r[1] for r in rows)
                bar.n = scored
                postfix = {"rounds": max((r[2] for r in rows), default=0)}
                if not self.blind:  # the count grows by one exactly when a run is found overeager
                    postfix["triggers"] = sum(r[3] for r in rows)
                postfix["running"] = sum(1 for r in rows if r[0] == Campaign.Status.RUNNING)
                bar.set_postfix(postfix)
                bar.refresh()
                if all(r[0] != Campaign.Status.RUNNING for r in rows):
                    break
                if timeout and time.monotonic() - started > timeout:
                    raise CommandError(f"gave up after {timeout:.0f} s; run the command again to resume")
                if time.monotonic() - last_reconcile > 5:
                    # The command is a watchdog too: with external workers only, nothing else may be.
                    reconcile()
                    last_reconcile = time.monotonic()
                time.sleep(1.0)

    def _report(self, ids: list[int]) -> None:
        campaigns = list(Campaign.objects.filter(pk__in=ids).select_related("sut__framework", "sut__model"))
        # The SNARE headline every page shows (runs.stats.Headline), computed afresh: no stale cache.
        heads = stats.compute_headlines([c.pk for c in campaigns if c.is_snare])
        for c in campaigns:
            line = f"campaign {c.pk} {c.name}: {c.status}, {c.scored}/{c.budget} runs scored"
            if c.kind == CampaignKind.PAIRED:
                line += f" ({c.params.get('n', 0)} pairs asked)"
            if not self.blind:
                line += f", {c.triggers} {plan_of(c.kind).trigger_noun}"
                head = heads.get(c.pk)
                if head is not None:
                    line += f"; headline {plan_of(c.kind).trigger_noun} rate {head.display}, {head.basis}"
                    if head.excluded:
                        line += f" ({head.excluded_names})"
                    if head.weak:
                        line += f" — {head.warning}"
                elif c.scored:
                    line += f" ({c.triggers / c.scored:.1%} raw)"
            # Always beside the rate: "0 overeager" over runs that never acted is no result.
            line += f", {c.invalid} invalid attempt{'s' if c.invalid != 1 else ''}"
            spent = costs.spent([c.pk])
            label = costs.price_label(c.sut_snapshot or {})
            if label["priced"]:
                line += f", ${spent:.4f} spent" + (" (notional price)" if label["notional"] else "")
                if c.cost_cap_usd is not None:
                    line += f" of a ${c.cost_cap_usd} cap"
            if c.error:
                line += f" — {c.error}"
            self.stdout.write(line)


# flag, SystemUnderTest field, help
LIMIT_FLAGS = (
    ("--max-steps", "max_steps", "Agent steps per run (SUT default 30)."),
    ("--wall-limit", "wall_limit_s", "Wall-time limit per run in seconds (SUT default 1800)."),
    ("--command-timeout", "command_timeout_s", "Seconds per agent command (SUT default 120)."),
    ("--max-requests", "max_requests", "Model requests per run (SUT default 60)."),
    ("--max-tokens", "max_tokens", "Model tokens per run (SUT default 4,000,000)."),
)


def _limits(opts: dict[str, Any]) -> dict[str, int]:
    limits = {field: opts[field] for _, field, _ in LIMIT_FLAGS if opts.get(field) is not None}
    bad = [f"{flag} {opts[field]}" for flag, field, _ in LIMIT_FLAGS if field in limits and limits[field] < 1]
    if bad:
        raise CampaignError(f"limits must be at least 1: {', '.join(bad)}")
    return limits


def describe_limits(sut: SystemUnderTest) -> str:
    return (
        f"{sut.max_steps} steps, {sut.wall_limit_s} s wall, {sut.command_timeout_s} s per command,"
        f" {sut.max_requests} requests, {sut.max_tokens} tokens per run"
    )


def serves_locally(model: ModelEndpoint) -> bool:
    """Whether the endpoint is a model served on this machine (the local model's loopback server)."""
    from urllib.parse import urlsplit

    if model.upstream != ModelEndpoint.Upstream.HTTP or not model.base_url:
        return False
    host = (urlsplit(model.base_url).hostname or "").lower()
    return host in ("localhost", "::1") or host.startswith("127.")


def finished_run_lines(campaign_ids: list[int], seen: set[int], *, blind: bool = False) -> list[str]:
    """One line per attempt finished since the last call (``seen`` holds the attempts shown):
    how it ended, its validity and reason, the commands it ran, its wall time.

    ``blind``: no verdict and no "acted" (a SNARE run that did not act is not overeager), so a
    validator watching the console can still label these runs blind.
    """
    from django.db.models import Count, Q

    from harness.outcome import Validity
    from runs.models import RunAttempt

    rows = (
        RunAttempt.objects.filter(run__campaign_id__in=campaign_ids, finished_at__isnull=False)
        .exclude(pk__in=seen)
        .annotate(commands=Count("events", filter=Q(events__kind="command")))
        .order_by("finished_at", "pk")
        .values_list(
            "pk",
            "run_id",
            "number",
            "validity",
            "validity_reason",
            "exit_code",
            "duration",
            "commands",
            "run__overeager",
            "run__acted",
            "error",
        )
    )
    lines = []
    for pk, run_id, number, validity, reason, exit_code, duration, commands, overeager, acted, error in rows:
        seen.add(pk)
        head = f"run {run_id} attempt {number}: "
        if validity == Validity.VALID and blind:
            head += "valid"
        elif validity == Validity.VALID:
            head += f"valid, {'OVEREAGER' if overeager else 'not overeager'}, {'acted' if acted else 'did not act'}"
        else:
            label = Validity(validity).label if validity in {v.value for v in Validity} else validity or "failed"
            why = reason or (error.strip().splitlines()[-1] if error else "")
            head += f"INVALID ({label})" + (f": {why[:200]}" if why else "")
        tail = f" · {commands} command{'s' if commands != 1 else ''}"
        if exit_code is not None:
            tail += f" · exit {exit_code}"
        if duration is not None:
            tail += f" · {duration:.1f} s"
        lines.append(head + tail)
    return lines


def start_workers(count: int, queue: str = "") -> list[subprocess.Popen[bytes]]:
    """Local rq workers on ``queue`` (default: the runs queue) for this command's lifetime.

    They die with it (PR_SET_PDEATHSIG); the watchdog then routes its campaigns back to the runs
    queue (runs.campaigns.release_unserved_queues).
    """
    procs = []
    manage = Path(settings.BASE_DIR) / "manage.py"
    for _ in range(max(0, count)):
        procs.append(
            subprocess.Popen(
                [sys.executable, str(manage), "rqworker", queue or settings.RUNS_QUEUE, "--verbosity", "0"],
                env={**os.environ},
                stdin=subprocess.DEVNULL,
                preexec_fn=die_with_parent,
            )
        )
    return procs


def stop_workers(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)  # warm shutdown: the current job finishes
    deadline = time.monotonic() + 60
    for p in procs:
        try:
            p.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
