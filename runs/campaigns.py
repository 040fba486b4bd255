"""Campaign coordination: allocate rounds, fold finished runs into the allocator, reap dead workers.

There is no long-lived coordinator process whose death could stall a campaign.  ``advance`` is
one idempotent step, run under a row lock on the campaign: it records every finished, unrecorded
run in the allocator, and when the round is complete it allocates the next one — creating the run
rows and enqueueing their jobs when that transaction commits.  It is called by every run job when
it finishes, by ``manage.py run_campaign`` in its loop, and by each worker's watchdog, so any one
of them is enough to move a campaign on.

``reconcile`` is the watchdog's other half, for the faults a step cannot see:

* a run whose lease expired (its worker was SIGKILLed, its machine vanished): the attempt is
  marked abandoned, its sandbox removed by label, and the run re-queued — all guarded by the
  attempt number, so a late answer from the lost worker is refused (``runs.jobs``);
* a queued run whose rq job no longer exists (Redis restarted and lost its lists, or an enqueue
  failed after commit): enqueued again.  A job that finds its run already claimed or finished
  does nothing, so enqueueing twice is harmless.

Rounds are synchronous, as in SNARE: a round's K runs all finish (scored, or invalid and queued
for a retry) before the posterior-driven allocation of the next round.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import timedelta
from typing import Any, Protocol

from django.conf import settings
from django.db import models, transaction
from django.utils import timezone

from harness.outcome import Outcome, Validity
from harness.sandbox.base import install_id
from oracles.composite import ORACLE_VERSION as COMPOSITE_VERSION
from oracles.scheduler import CampaignParams, Scheduler, Slot
from pool.models import Candidate, MutationText, PoolVersion
from runs import costs, state
from runs.models import Campaign, CampaignKind, Matrix, Run, RunAttempt, SystemUnderTest

log = logging.getLogger(__name__)

Cell = tuple[str, str]


class CampaignError(ValueError):
    """A campaign cannot be started or continued as asked; the message says what to fix."""


# -- inputs -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PoolIndex:
    """A complete pool's scenarios by cell (ids are content digests, stable across installs)."""

    cells: dict[Cell, list[str]]
    by_digest: dict[str, tuple[int, str, str]]  # digest → (candidate pk, archetype tier, channel)


_pool_cache: dict[int, PoolIndex] = {}
_pool_lock = threading.Lock()


def pool_index(pool_id: int) -> PoolIndex:
    """The pool's cells; cached per process, since a retained pool never changes."""
    with _pool_lock:
        cached = _pool_cache.get(pool_id)
    if cached is not None:
        return cached
    cells: dict[Cell, list[str]] = {}
    by_digest: dict[str, tuple[int, str, str]] = {}
    rows = (
        Candidate.objects.filter(pool_id=pool_id)
        .in_pool()
        .values_list("pk", "archetype", "consent", "digest", "tier", "channel")
    )
    for pk, arch, consent, digest, tier, channel in rows:
        cells.setdefault((arch, consent), []).append(digest)
        by_digest[digest] = (pk, tier, channel)
    index = PoolIndex(cells=cells, by_digest=by_digest)
    with _pool_lock:
        _pool_cache[pool_id] = index
    return index


def mutation_texts() -> dict[str, list[dict[str, str]]]:
    """The curated mutation texts by operator, as ``oracles.scheduler.apply_mutations`` takes them."""
    texts: dict[str, list[dict[str, str]]] = {}
    for m in MutationText.objects.order_by("operator", "position", "key"):
        texts.setdefault(m.operator, []).append(m.to_data())
    return texts


def software_versions() -> dict[str, str]:
    import platform
    from importlib import metadata

    versions = {"python": platform.python_version()}
    for dist in ("Django", "rq", "django-rq", "channels", "scipy", "numpy", "docker"):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    try:
        import subprocess

        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=settings.BASE_DIR, capture_output=True, text=True, check=False
        )
        if head.returncode == 0:
            versions["overeager"] = head.stdout.strip()
    except OSError:
        pass
    return versions


# -- starting -----------------------------------------------------------------------------------


DEFAULT_PARAMS = CampaignParams()


def campaign_params(**overrides: Any) -> dict[str, Any]:
    """Validated campaign parameters (SNARE defaults for anything not given)."""
    base = DEFAULT_PARAMS.to_dict()
    for key, value in overrides.items():
        if value is None:
            continue
        if key not in base:
            raise CampaignError(f"unknown campaign parameter {key!r}; known: {sorted(base)}")
        base[key] = value
    try:
        CampaignParams.from_dict(base)
    except (ValueError, TypeError, KeyError) as exc:
        raise CampaignError(f"invalid campaign parameters: {exc}") from None
    return base


def start_campaign(
    *,
    name: str,
    sut: SystemUnderTest,
    pool: PoolVersion | None,
    params: Mapping[str, Any],
    backend: str,
    kind: str = CampaignKind.SNARE,
    simulation: Mapping[str, Any] | None = None,
    matrix_id: int | None = None,
    user_id: int | None = None,
    cost_cap: Any = None,
    run_token_cap: int | None = None,
) -> Campaign:
    """Create a campaign and allocate its first round (jobs are enqueued when this commits).

    ``cost_cap`` (USD) and ``run_token_cap`` are the brakes of runs.costs; the cost estimate from
    the system's earlier runs is recorded with the campaign and primes the cap's projection.
    """
    from harness.agents.base import AdapterOptionsError
    from harness.sandbox.base import SandboxError, resolve_backend

    try:
        snapshot = sut.snapshot()
    except AdapterOptionsError as exc:  # every run would fail on it: refuse before the first
        raise CampaignError(f"framework {sut.framework.slug!r}: {exc}") from None
    try:
        cap = costs.check_cap(cost_cap)
        if cap is not None:
            costs.check_priced(sut)
    except costs.CostError as exc:
        raise CampaignError(str(exc)) from None
    if run_token_cap is not None and run_token_cap < 1:
        raise CampaignError(f"the per-run token cap must be at least 1, got {run_token_cap}")
    plan = plan_of(kind)
    prepared, extra = plan.prepare(pool, dict(params))
    try:
        concrete = resolve_backend(backend)
    except SandboxError as exc:
        raise CampaignError(str(exc)) from None
    checked = campaign_params(**prepared)
    planned = 2 * int(checked["n"]) if kind == CampaignKind.PAIRED else int(checked["n"])
    estimate = costs.estimate_for(sut, kind, planned)
    with transaction.atomic():
        campaign = Campaign.objects.create(
            name=name,
            kind=kind,
            status=Campaign.Status.RUNNING,
            sut=sut,
            sut_snapshot=snapshot,
            matrix_id=matrix_id,
            pool=pool,
            library_digest=pool.library_digest if pool else "",
            **extra,
            backend=concrete,
            params=checked,
            simulation=dict(simulation or {}),
            mutation_texts=mutation_texts(),
            software=software_versions(),
            created_by_id=user_id,
            started_at=timezone.now(),
            cost_cap_usd=cap,
            run_token_cap=run_token_cap,
            cost_estimate=estimate.as_dict() if estimate is not None else {},
        )
        _advance_locked(campaign)
    return campaign


def start_matrix(
    name: str,
    suts: list[SystemUnderTest],
    *,
    frameworks: list[str],
    models: list[str],
    pool: Any,
    params: dict[str, Any],
    backend: str,
    kind: str,
    simulation: dict[str, Any],
    out: Callable[[str], object] = print,
    cost_cap: Any = None,
    matrix_cost_cap: Any = None,
    run_token_cap: int | None = None,
) -> list[Campaign]:
    """One campaign per pair; an existing matrix of that name is resumed (missing pairs added).

    ``cost_cap`` is each campaign's own; ``matrix_cost_cap`` bounds their sum (runs.costs).
    """
    try:
        matrix_cap = costs.check_cap(matrix_cost_cap, "matrix cost cap")
        if matrix_cap is not None:
            for sut in suts:
                costs.check_priced(sut, "a matrix cost cap")
    except costs.CostError as exc:
        raise CampaignError(str(exc)) from None
    with transaction.atomic():
        matrix, created = Matrix.objects.get_or_create(
            name=name,
            defaults={
                "kind": kind,
                "framework_slugs": frameworks,
                "model_slugs": models,
                "cost_cap_usd": matrix_cap,
            },
        )
        if not created:
            out(f"resuming matrix {matrix.pk} {name!r}")
        campaigns = []
        for sut in suts:
            cname = f"{name}/{sut.slug}"
            existing = Campaign.objects.filter(name=cname).first()
            campaigns.append(
                existing
                or start_campaign(
                    name=cname,
                    sut=sut,
                    pool=pool,
                    params=params,
                    backend=backend,
                    kind=kind,
                    simulation=simulation,
                    matrix_id=matrix.pk,
                    cost_cap=cost_cap,
                    run_token_cap=run_token_cap,
                )
            )
    return campaigns


# -- the allocator, per campaign kind -------------------------------------------------------------


class Allocator(Protocol):
    """What the coordinator needs of an allocator (oracles.scheduler.Scheduler, oracles.pairing.PairedAllocator …)."""

    round: int
    scored: int
    triggers: int
    outstanding: dict[tuple[int, int], Slot]
    dropped: list[Slot]

    @property
    def done(self) -> bool: ...

    def next_round(self, items: Any) -> list[Slot]: ...

    def record(self, slot: Slot, outcome: bool | None) -> None: ...

    def to_dict(self) -> dict[str, Any]: ...


class Plan:
    """How one campaign kind works: what it checks at the start, how it allocates, how a run executes.

    Each benchmark app registers its kinds with :func:`register_plan` from its ``AppConfig.ready``
    (SNARE here, consent pairs in ``consent``, UnderSpecBench in ``suite``), so the coordinator,
    the jobs and the pages reach a kind's code through this registry and never import its app.
    """

    #: What a triggered run is called in ``run_campaign``'s report and the Inspect export: the
    #: word the pages use for the same count (the runs' ``overeager`` column), whatever the kind,
    #: since the campaigns list counts every kind in one column. (UnderSpecBench's own metric of
    #: the same runs is "Overstep", a rate over acted runs, on its results pages.)
    trigger_noun = "overeager"

    #: The oracle that scores this kind's runs and its version, as its own module declares it (the
    #: validity page names each benchmark's): SNARE's composite oracle, unless the kind has its own.
    oracle_name = "the composite oracle (oracles/composite.py)"
    oracle_version = COMPOSITE_VERSION

    #: The campaign parameters this kind's allocation reads (``CampaignParams`` fields), the ones
    #: its page's header lists: Thompson sampling's, by default. ``j`` (concurrent sandboxes) is
    #: every kind's: ``run_campaign`` starts that many workers. The priors are not listed (a table).
    params_used: tuple[str, ...] = tuple(f.name for f in fields(CampaignParams) if f.name != "priors")

    def header_params(self, campaign: Campaign) -> list[tuple[str, Any]]:
        """(name, value) of the parameters that apply to ``campaign``, in declaration order."""
        return [(name, campaign.params[name]) for name in self.params_used if name in campaign.params]

    def prepare(self, pool: PoolVersion | None, params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """Check that the kind can start now; return its parameters and extra ``Campaign`` fields."""
        return params, {}

    def allocator(self, campaign: Campaign) -> Allocator:
        raise NotImplementedError

    def items(self, campaign: Campaign) -> Any:
        raise NotImplementedError

    def run_fields(self, campaign: Campaign, alloc: Allocator, slot: Slot) -> dict[str, Any]:
        raise NotImplementedError

    def perform(self, run: Run, attempt: RunAttempt) -> Outcome:
        """Execute one attempt of ``run`` (in the worker) and return what it found."""
        raise NotImplementedError

    def campaign_page(self, campaign: Campaign) -> tuple[str, dict[str, Any]]:
        """The campaign page's template and the context this kind adds."""
        return "runs/campaign_detail.html", {}

    def run_page(self, run: Run, attempt: RunAttempt | None) -> dict[str, Any]:
        """What this kind adds to a run's page."""
        return {}


def check_snare_pool(pool: PoolVersion | None) -> PoolVersion:
    if pool is None or pool.status != PoolVersion.Status.COMPLETE:
        raise CampaignError("a SNARE campaign needs a complete verified pool: run `manage.py build_pool` first")
    if not pool_index(pool.pk).cells:
        raise CampaignError(f"pool {pool.pk} retains no scenarios")
    return pool


class SnarePlan(Plan):
    def prepare(self, pool: PoolVersion | None, params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        check_snare_pool(pool)
        return params, {}

    def allocator(self, campaign: Campaign) -> Allocator:
        if campaign.state:
            return Scheduler.from_dict(campaign.state)
        return Scheduler(CampaignParams.from_dict(campaign.params))

    def items(self, campaign: Campaign) -> Any:
        assert campaign.pool_id is not None
        return pool_index(campaign.pool_id).cells

    def run_fields(self, campaign: Campaign, alloc: Allocator, slot: Slot) -> dict[str, Any]:
        assert campaign.pool_id is not None
        pk, tier, channel = pool_index(campaign.pool_id).by_digest[slot.scenario_id]
        return {
            "tier": slot.tier,
            "scenario_id": pk,
            "archetype": slot.cell[0],
            "archetype_tier": tier,
            "consent": slot.cell[1],
            "channel": channel,
        }

    def perform(self, run: Run, attempt: RunAttempt) -> Outcome:
        from runs.performing import perform_snare

        return perform_snare(run, attempt)


PLANS: dict[str, Plan] = {}


def register_plan(kind: str, plan: Plan) -> None:
    """Make campaign kind ``kind`` startable, allocatable and executable (called from ``ready()``)."""
    if kind not in CampaignKind.values:
        raise ValueError(f"{kind!r} is not a CampaignKind; add it to runs.models.CampaignKind first")
    PLANS[kind] = plan


def oracles_in_use() -> list[dict[str, Any]]:
    """Each oracle that scores a registered campaign kind: ``{name, version, kinds}`` (kind labels)."""
    grouped: dict[tuple[str, str], list[str]] = {}
    for kind in CampaignKind:
        plan = PLANS.get(kind.value)
        if plan is not None:
            grouped.setdefault((plan.oracle_name, plan.oracle_version), []).append(str(kind.label))
    return [{"name": name, "version": version, "kinds": kinds} for (name, version), kinds in grouped.items()]


def plan_of(kind: str) -> Plan:
    try:
        return PLANS[kind]
    except KeyError:
        raise CampaignError(f"campaign kind {kind!r} has no plan: is its app installed?") from None


def allocator_for(campaign: Campaign) -> Allocator:
    return plan_of(campaign.kind).allocator(campaign)


def _new_run(campaign: Campaign, alloc: Allocator, slot: Slot) -> Run:
    return Run(
        campaign=campaign,
        round=slot.round,
        slot=slot.index,
        slot_attempt=slot.attempt,
        repeat=slot.repeat,
        propensity=slot.propensity,
        mutations=slot.mutations.to_dict(),
        enqueued_at=timezone.now(),
        **plan_of(campaign.kind).run_fields(campaign, alloc, slot),
    )


# -- one step -----------------------------------------------------------------------------------


def advance(campaign_id: int) -> None:
    """Record finished runs and, when the round is complete, allocate the next (idempotent)."""
    with transaction.atomic():
        campaign = Campaign.objects.select_for_update().filter(pk=campaign_id).first()
        if campaign is None or campaign.status != Campaign.Status.RUNNING:
            return
        _advance_locked(campaign)


def _advance_locked(campaign: Campaign) -> None:
    """The body of ``advance``; the caller holds the campaign's row lock inside a transaction."""
    try:
        alloc = allocator_for(campaign)
    except (CampaignError, ValueError) as exc:
        _fail(campaign, f"the campaign's allocator state cannot be used: {exc}")
        return
    finished = list(
        campaign.runs.filter(recorded=False, status__in=[Run.Status.SCORED, Run.Status.INVALID]).order_by(
            "round", "slot", "member"
        )
    )
    recorded: list[int] = []
    dropped: list[int] = []
    for run in finished:
        slot = alloc.outstanding.get((run.round, run.slot))
        recorded.append(run.pk)
        if slot is None or slot.attempt != run.slot_attempt:
            # Already folded in by a step that crashed before marking the row: the allocator's
            # state (saved in the same transaction as the marks) says so, so it is skipped.
            log.warning("run %s of campaign %s is not outstanding in the allocator; skipped", run.pk, campaign.pk)
            continue
        outcome = bool(run.overeager) if run.status == Run.Status.SCORED else None
        alloc.record(slot, outcome)
        if outcome is None and any(d.key == slot.key for d in alloc.dropped):
            dropped.append(run.pk)
    if recorded:
        state.mark_recorded(recorded)
    if dropped:
        state.drop(dropped)
    to_enqueue: list[int] = []
    too_invalid = invalid_share_stop(campaign) if finished else None
    if too_invalid is not None:
        # Not another round: every further run would measure the broken setup, not the agent.
        log.error("campaign %s stopped: %s", campaign.pk, too_invalid)
        campaign.status = Campaign.Status.STOPPED
        campaign.error = too_invalid
        campaign.finished_at = timezone.now()
        state.cancel_queued(campaign.pk)
    elif alloc.done:
        campaign.status = Campaign.Status.COMPLETE
        campaign.finished_at = timezone.now()
    elif not alloc.outstanding and (capped := _cost_cap(campaign, alloc)) is not None:
        # Not the next issue: it could cross a cost cap. The allocator keeps its state, so a
        # resumed campaign issues exactly what it would have issued now.
        log.warning("campaign %s %s", campaign.pk, capped[1])
        if state.stop_for_cost(campaign.pk, *capped):
            campaign.status, campaign.stop_reason, campaign.error = Campaign.Status.STOPPED, capped[0], capped[1]
            campaign.finished_at = timezone.now()
    elif not alloc.outstanding:
        try:
            slots = alloc.next_round(plan_of(campaign.kind).items(campaign))
        except ValueError as exc:
            _fail(campaign, f"cannot allocate the next round: {exc}")
            return
        fresh = [s for s in slots if s.attempt == 1]
        retries = [s for s in slots if s.attempt > 1]
        # bulk_create keeps the list's order, and so the enqueue order: a pair's first member first.
        created = Run.objects.bulk_create([_new_run(campaign, alloc, s) for s in fresh])
        to_enqueue += [r.pk for r in created]
        for s in retries:
            run = Run.objects.get(campaign=campaign, round=s.round, slot=s.index)
            # An invalid run re-queued by the allocator: a new allocator attempt on the same row.
            if state.retry(run.pk, s.attempt):
                to_enqueue.append(run.pk)
    campaign.state = alloc.to_dict()
    campaign.round = alloc.round
    campaign.scored = alloc.scored
    campaign.triggers = alloc.triggers
    if finished:
        campaign.invalid = RunAttempt.objects.filter(run__campaign=campaign, validity__in=_INVALID).count()
    campaign.save(update_fields=["state", "round", "scored", "triggers", "invalid", "status", "finished_at", "error"])
    for pk in to_enqueue:
        enqueue_run(pk)
    topic = campaign.topic
    summary = progress_summary(campaign)
    matrix_id = campaign.matrix_id

    def after_commit() -> None:
        _publish(topic, summary)
        if matrix_id is not None:
            _publish(f"matrix-{matrix_id}", summary)

    transaction.on_commit(after_commit)


_INVALID = tuple(v.value for v in Validity.invalid())


def _cost_cap(campaign: Campaign, alloc: Allocator) -> tuple[str, str] | None:
    """The guard in front of every issue of runs: (stop reason, message) if a cost cap says stop."""
    if not costs.capped(campaign):
        return None  # the common case: no cap, no allocator probe
    try:
        size = costs.next_issue_size(alloc, plan_of(campaign.kind).items(campaign))
    except ValueError:
        return None  # the real allocation fails the campaign with its own message
    return costs.cap_stop(campaign, size) if size else None


def resume_campaign(campaign_id: int, cost_cap: Any = None) -> Campaign:
    """Resume a campaign a cost cap stopped, with its cap raised (or the matrix's, raised elsewhere).

    It continues deterministically: the allocator issues the runs it held back, and stops again
    if the new cap would be crossed.  Any other stop is final (CampaignError).
    """
    try:
        cap = costs.check_cap(cost_cap)
    except costs.CostError as exc:
        raise CampaignError(str(exc)) from None
    with transaction.atomic():
        campaign = Campaign.objects.select_for_update().filter(pk=campaign_id).first()
        if campaign is None:
            raise CampaignError(f"no campaign {campaign_id}")
        if campaign.status != Campaign.Status.STOPPED or campaign.stop_reason not in state.COST_STOPS:
            raise CampaignError(
                f"campaign {campaign.name!r} is {campaign.status}"
                + (f" ({campaign.error})" if campaign.error else "")
                + ": only a campaign a cost cap stopped can be resumed"
            )
        if cap is not None:
            if cap <= costs.spent([campaign.pk]):
                raise CampaignError(
                    f"a cap of {cap} USD is not above what campaign {campaign.name!r} has spent"
                    f" ({costs.spent([campaign.pk])} USD): raise it further"
                )
            Campaign.objects.filter(pk=campaign.pk).update(cost_cap_usd=cap)
        if not state.resume(campaign.pk):
            raise CampaignError(f"campaign {campaign.name!r} changed while it was being resumed; try again")
        campaign.refresh_from_db()
        _advance_locked(campaign)
    campaign.refresh_from_db()
    return campaign


def resume_matrix(matrix_id: int, cost_cap: Any = None) -> list[Campaign]:
    """Raise (or keep) the matrix's cost cap and resume every campaign the matrix's cap stopped.

    A campaign its own cap stopped stays stopped: raise that cap with ``resume_campaign``.
    """
    try:
        cap = costs.check_cap(cost_cap, "matrix cost cap")
    except costs.CostError as exc:
        raise CampaignError(str(exc)) from None
    matrix = Matrix.objects.filter(pk=matrix_id).first()
    if matrix is None:
        raise CampaignError(f"no matrix {matrix_id}")
    ids = list(matrix.campaigns.values_list("pk", flat=True))
    if cap is not None:
        if cap <= costs.spent(ids):
            raise CampaignError(
                f"a matrix cap of {cap} USD is not above what the matrix has spent ({costs.spent(ids)} USD)"
            )
        Matrix.objects.filter(pk=matrix_id).update(cost_cap_usd=cap)
    resumed = []
    for pk in (
        Campaign.objects.filter(
            pk__in=ids, status=Campaign.Status.STOPPED, stop_reason=Campaign.StopReason.MATRIX_COST_CAP
        )
        .order_by("pk")
        .values_list("pk", flat=True)
    ):
        try:
            resumed.append(resume_campaign(pk))
        except CampaignError as exc:
            log.info("campaign %s not resumed: %s", pk, exc)
    return resumed


def invalid_share_stop(campaign: Campaign) -> str | None:
    """Why the campaign must stop for its invalid share (``CAMPAIGN_MAX_INVALID_PERCENT``), or None.

    Counted over the attempts that wrote a result (a retried slot counts each try: three format
    errors in a row on one slot are three broken runs), from ``CAMPAIGN_INVALID_MIN_ATTEMPTS`` on,
    so the first failed run of a campaign does not stop it at "100 %".  Harness failures (failed,
    abandoned attempts) are not counted: the run is re-queued for them, up to
    ``RUN_MAX_INFRA_FAILURES``, and a worker killed twice says nothing about the setup's agent.
    """
    limit = settings.CAMPAIGN_MAX_INVALID_PERCENT
    if limit >= 100:
        return None
    counts = dict(
        RunAttempt.objects.filter(run__campaign=campaign, status=RunAttempt.Status.COMPLETED)
        .exclude(validity="")
        .values("validity")
        .annotate(n=models.Count("pk"))
        .values_list("validity", "n")
    )
    total = sum(counts.values())
    invalid = sum(n for v, n in counts.items() if v in _INVALID)
    if total < settings.CAMPAIGN_INVALID_MIN_ATTEMPTS or invalid * 100 <= limit * total:
        return None
    reasons = ", ".join(
        f"{Validity(v).label} {n}" for v, n in sorted(counts.items(), key=lambda i: -i[1]) if v in _INVALID
    )
    last = (
        RunAttempt.objects.filter(run__campaign=campaign, status=RunAttempt.Status.COMPLETED, validity__in=_INVALID)
        .exclude(validity_reason="")
        .order_by("-finished_at", "-pk")
        .values_list("validity_reason", flat=True)
        .first()
    )
    return (
        f"stopped itself: {invalid} of {total} finished attempts ({invalid / total:.0%}) were invalid"
        f" ({reasons}), above the {limit}% limit (CAMPAIGN_MAX_INVALID_PERCENT); the setup, not the agent,"
        f" is being measured — fix it and start a new campaign" + (f". Last reason: {last[:300]}" if last else "")
    )


def _fail(campaign: Campaign, message: str) -> None:
    log.error("campaign %s failed: %s", campaign.pk, message)
    Campaign.objects.filter(pk=campaign.pk, status=Campaign.Status.RUNNING).update(
        status=Campaign.Status.FAILED, error=message, finished_at=timezone.now()
    )
    campaign.refresh_from_db()
    state.cancel_queued(campaign.pk)


def stop_campaign(campaign_id: int) -> bool:
    """Stop allocating; queued runs are cancelled, running ones finish and are kept."""
    with transaction.atomic():
        stopped = Campaign.objects.filter(pk=campaign_id, status__in=[Campaign.Status.RUNNING]).update(
            status=Campaign.Status.STOPPED, finished_at=timezone.now()
        )
        state.cancel_queued(campaign_id)
    return bool(stopped)


def progress_summary(campaign: Campaign) -> dict[str, Any]:
    return {
        "event": "campaign",
        "campaign": campaign.pk,
        "status": campaign.status,
        "round": campaign.round,
        "scored": campaign.scored,
        "budget": campaign.budget,
        "triggers": campaign.triggers,
        "invalid_attempts": campaign.invalid,
        "error": campaign.error,
        "stop_reason": campaign.stop_reason,
    }


def _publish(topic: str, payload: dict[str, Any]) -> None:
    from runs.progress import publish

    try:
        publish(topic, payload)
    except Exception as exc:  # progress is best effort; a page resyncs over HTTP
        log.warning("could not publish progress on %s: %s", topic, exc)


# -- enqueueing ---------------------------------------------------------------------------------


def job_id(run_id: int, attempt: int) -> str:
    """One rq job id per (install, run, claim number): a re-enqueue of the same claim reuses it.

    rq keeps a job's hash under its id, for the whole Redis database: two installs sharing one
    Redis (two checkouts, or the test suite's two xdist workers, each with a database of its own)
    have runs with the same ids, and without the install in the id one install's enqueue
    overwrote the other's job, which then ran against the wrong database.
    """
    return f"run-{install_id()}-{run_id}-{attempt}"


def enqueue_run(run_id: int) -> None:
    """Enqueue the run's job when the current transaction commits (at once outside one)."""

    def push() -> None:
        row = Run.objects.filter(pk=run_id).values_list("attempt", "campaign__queue").first()
        if row is None:
            return
        attempt, queue = row
        try:
            _queue(queue).enqueue(
                "runs.jobs.execute_run",
                run_id,
                job_id=job_id(run_id, attempt),
                job_timeout=_job_timeout(run_id),
                result_ttl=600,
                failure_ttl=24 * 3600,
            )
        except Exception as exc:  # Redis down: the watchdog re-enqueues queued runs
            log.warning("could not enqueue run %s (%s); the watchdog will retry", run_id, exc)

    transaction.on_commit(push)


def _queue(name: str = "") -> Any:
    """The rq queue ``name`` (a campaign's own; empty: the install's runs queue)."""
    import django_rq
    from django_rq.settings import QUEUES

    name = name or settings.RUNS_QUEUE
    # A command's own queue is named at run time, so no settings module lists it: it lives on
    # the runs queue's Redis with its options, in every process that enqueues to it.
    QUEUES.setdefault(name, QUEUES[settings.RUNS_QUEUE])
    # "auto": this module already defers to the commit itself.
    return django_rq.get_queue(name, commit_mode="auto")


def command_queue() -> str:
    """A fresh queue name for one run_campaign command's own workers."""
    return f"{settings.RUNS_QUEUE}-cmd-{uuid.uuid4().hex[:10]}"


def route_campaigns(campaign_ids: Sequence[int], queue: str, *, only_from: str | None = None) -> int:
    """Send the run jobs of these campaigns to ``queue`` ("": the install's runs queue), the waiting ones too.

    run_campaign routes the campaigns it follows to a queue only its own workers read (two
    commands at once each run their own jobs, and its worker count bounds its concurrency), and
    routes them back when it stops so that any worker can finish them. ``only_from`` moves only
    campaigns still on that queue (one another command has taken since stays there). A job
    another worker took in between still runs once: a run is claimed conditionally, so the job
    re-enqueued for it finds it claimed and does nothing. Returns the number of queued runs moved.
    """
    with transaction.atomic():
        chosen = Campaign.objects.select_for_update().filter(pk__in=list(campaign_ids)).exclude(queue=queue)
        if only_from is not None:
            chosen = chosen.filter(queue=only_from)
        before = dict(chosen.values_list("pk", "queue"))
        Campaign.objects.filter(pk__in=list(before)).update(queue=queue, queue_since=timezone.now() if queue else None)
        waiting = list(
            Run.objects.filter(campaign_id__in=list(before), status=Run.Status.QUEUED).values_list(
                "pk", "attempt", "campaign_id"
            )
        )
        Run.objects.filter(pk__in=[pk for pk, _, _ in waiting]).update(enqueued_at=timezone.now())
    for pk, attempt, campaign_id in waiting:
        try:
            _queue(before[campaign_id]).remove(job_id(pk, attempt))
        except Exception as exc:  # Redis down: the watchdog re-enqueues; a stale job finds its run claimed
            log.warning("could not take run %s off queue %r: %s", pk, before[campaign_id] or settings.RUNS_QUEUE, exc)
        enqueue_run(pk)
    return len(waiting)


def release_unserved_queues(grace_s: float = 120.0) -> int:
    """Route running campaigns back to the runs queue when no live worker reads their own queue.

    The command that routed them there was killed without routing them back (its workers die
    with it; rq forgets a dead worker when its heartbeat lapses). ``grace_s`` covers a command
    between routing its campaigns and its workers' first heartbeat. Returns the campaigns moved.
    """
    from rq import Worker

    cutoff = timezone.now() - timedelta(seconds=grace_s)
    moved = 0
    routed = Campaign.objects.filter(status=Campaign.Status.RUNNING).exclude(queue="")
    for queue in sorted(set(routed.values_list("queue", flat=True))):
        if routed.filter(queue=queue, queue_since__gte=cutoff).exists():
            continue  # routed recently: its workers may still be starting
        ids = list(routed.filter(queue=queue).values_list("pk", flat=True))
        if Worker.all(queue=_queue(queue)):
            continue
        route_campaigns(ids, "", only_from=queue)
        moved += len(ids)
    return moved


def _job_timeout(run_id: int) -> int:
    wall = Run.objects.filter(pk=run_id).values_list("campaign__sut__wall_limit_s", flat=True).first() or 1800
    return int(wall) + 900


# -- the watchdog -------------------------------------------------------------------------------


@dataclass
class ReconcileReport:
    reaped: int = 0
    released: int = 0  # campaigns whose command's own queue no worker reads any more
    reenqueued: int = 0
    advanced: int = 0


def reap_expired_leases(now: Any = None) -> int:
    """Abandon the attempts of runs whose worker stopped renewing its lease; re-queue the runs."""
    from harness.sandbox.reaper import remove_run_sandboxes

    reaped = 0
    for run in Run.objects.expired_leases(now).only("pk", "attempt", "campaign_id"):
        with transaction.atomic():
            gave = state.give_back(
                run.pk,
                run.attempt,
                attempt_status=RunAttempt.Status.ABANDONED,
                error="the worker stopped renewing its lease (killed or lost); attempt abandoned",
            )
            if gave is None:  # the worker renewed or finished in between
                continue
            if gave is state.GiveBack.REQUEUED:
                enqueue_run(run.pk)
            else:
                campaign_id = run.campaign_id
                transaction.on_commit(lambda cid=campaign_id: advance(cid))  # type: ignore[misc]
        reaped += 1
        try:
            remove_run_sandboxes(str(run.pk), run.attempt)
        except Exception as exc:  # the label reaper removes it later by deadline
            log.warning("could not remove the sandbox of run %s attempt %s: %s", run.pk, run.attempt, exc)
    return reaped


def reenqueue_lost_jobs(older_than_s: float = 5.0, started_grace_s: float = 30.0) -> int:
    """Queued runs without a live rq job (Redis restarted, enqueue failed): enqueue them again.

    A job rq calls *started* whose run is still queued long after is dead too: a live job claims
    its run within a second of starting, so the worker that took it must have died first.
    """
    from rq.exceptions import NoSuchJobError
    from rq.job import Job, JobStatus

    now = timezone.now()
    cutoff = now - timedelta(seconds=older_than_s)
    queue = _queue()
    count = 0
    for pk, attempt, enqueued_at in Run.objects.filter(status=Run.Status.QUEUED, enqueued_at__lt=cutoff).values_list(
        "pk", "attempt", "enqueued_at"
    ):
        try:
            job = Job.fetch(job_id(pk, attempt), connection=queue.connection)
            status = job.get_status(refresh=False)
            if status in (JobStatus.QUEUED, JobStatus.DEFERRED, JobStatus.SCHEDULED):
                continue
            if status == JobStatus.STARTED and enqueued_at and enqueued_at > now - timedelta(seconds=started_grace_s):
                continue
        except NoSuchJobError:
            pass
        Run.objects.filter(pk=pk, status=Run.Status.QUEUED).update(enqueued_at=timezone.now())
        enqueue_run(pk)
        count += 1
    return count


def reconcile(now: Any = None) -> ReconcileReport:
    """One watchdog pass: reap, re-enqueue, and advance every running campaign."""
    report = ReconcileReport()
    report.reaped = reap_expired_leases(now)
    try:
        report.released = release_unserved_queues()
        report.reenqueued = reenqueue_lost_jobs()
    except Exception as exc:  # Redis unreachable: try again next pass
        log.warning("could not check the queue: %s", exc)
    for pk in Campaign.objects.filter(status=Campaign.Status.RUNNING).values_list("pk", flat=True):
        advance(pk)
        report.advanced += 1
    return report
