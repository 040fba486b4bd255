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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Protocol

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from oracles.listalloc import ListAllocator, full_items, item_key, sample_items
from oracles.pairing import PairedAllocator, PairItem
from oracles.scheduler import CampaignParams, Scheduler, Slot
from pool.models import Candidate, MutationText, PoolVersion
from runs.models import Campaign, CampaignKind, Run, RunAttempt, SystemUnderTest

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
) -> Campaign:
    """Create a campaign and allocate its first round (jobs are enqueued when this commits)."""
    from runs.sandbox.base import SandboxError, resolve_backend

    if kind in (CampaignKind.SNARE, CampaignKind.PAIRED):
        if pool is None or pool.status != PoolVersion.Status.COMPLETE:
            raise CampaignError("a SNARE campaign needs a complete verified pool: run `manage.py build_pool` first")
        if not pool_index(pool.pk).cells:
            raise CampaignError(f"pool {pool.pk} retains no scenarios")
        if kind == CampaignKind.PAIRED and not pair_index(pool.pk):
            raise CampaignError(
                f"pool {pool.pk} has no verified consent-stripped twins: run `manage.py build_pool --twins` first"
            )
    suite_digest = ""
    if kind in (CampaignKind.USB_FULL, CampaignKind.USB_SAMPLE):
        from suite.models import SuiteVersion

        if not suite_index().prompts:
            raise CampaignError("the UnderSpecBench suite is empty: run `manage.py load_suite` first")
        suite_digest = SuiteVersion.current_digest()
        if kind == CampaignKind.USB_FULL:
            # The full matrix's budget is the suite itself: one run per prompt.
            params = {**dict(params), "n": len(suite_index().prompts)}
    try:
        concrete = resolve_backend(backend)
    except SandboxError as exc:
        raise CampaignError(str(exc)) from None
    checked = campaign_params(**dict(params))
    with transaction.atomic():
        campaign = Campaign.objects.create(
            name=name,
            kind=kind,
            status=Campaign.Status.RUNNING,
            sut=sut,
            sut_snapshot=sut.snapshot(),
            matrix_id=matrix_id,
            pool=pool,
            library_digest=pool.library_digest if pool else "",
            suite_digest=suite_digest,
            backend=concrete,
            params=checked,
            simulation=dict(simulation or {}),
            mutation_texts=mutation_texts(),
            software=software_versions(),
            created_by_id=user_id,
            started_at=timezone.now(),
        )
        _advance_locked(campaign)
    return campaign


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
    """How one campaign kind allocates: its allocator, what it draws from, and the run rows it makes."""

    def allocator(self, campaign: Campaign) -> Allocator:
        raise NotImplementedError

    def items(self, campaign: Campaign) -> Any:
        raise NotImplementedError

    def run_fields(self, campaign: Campaign, alloc: Allocator, slot: Slot) -> dict[str, Any]:
        raise NotImplementedError


class SnarePlan(Plan):
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


class PairedPlan(SnarePlan):
    def allocator(self, campaign: Campaign) -> Allocator:
        if campaign.state:
            return PairedAllocator.from_dict(campaign.state)
        return PairedAllocator(CampaignParams.from_dict(campaign.params))

    def items(self, campaign: Campaign) -> Any:
        assert campaign.pool_id is not None
        return pair_index(campaign.pool_id)

    def run_fields(self, campaign: Campaign, alloc: Allocator, slot: Slot) -> dict[str, Any]:
        assert isinstance(alloc, PairedAllocator)
        fields = super().run_fields(campaign, alloc, slot)
        pair = alloc.pair_of(slot)
        fields["channel"] = pair.stratum[2]  # the twin has no phrasing: its stratum's channel
        fields["tier"] = ""
        return {**fields, **alloc.run_fields(slot)}


@dataclass(frozen=True)
class SuiteIndex:
    """The suite's prompts: variants per family, and what a run row needs of each prompt."""

    variants: dict[str, list[str]]
    prompts: dict[str, tuple[int, str, str, int, int, int]]  # "family/variant" → pk, domain, surface, s, b, r


_suite_cache: dict[str, SuiteIndex] = {}


def suite_index() -> SuiteIndex:
    """The current suite's prompts (cached per suite digest: an admin edit gives a new index)."""
    from suite.models import FamilyPrompt, SuiteVersion

    digest = SuiteVersion.current_digest()
    with _pool_lock:
        cached = _suite_cache.get(digest)
    if cached is not None:
        return cached
    variants: dict[str, list[str]] = {}
    prompts: dict[str, tuple[int, str, str, int, int, int]] = {}
    rows = FamilyPrompt.objects.select_related("family").values_list(
        "pk", "family__slug", "family__domain", "family__surface", "s", "b", "r"
    )
    for pk, slug, domain, surface, s_, b, r in rows:
        variant = f"S{s_}-B{b}-R{r}"
        variants.setdefault(slug, []).append(variant)
        prompts[item_key(slug, variant)] = (pk, domain, surface, s_, b, r)
    index = SuiteIndex(variants, prompts)
    with _pool_lock:
        _suite_cache[digest] = index
    return index


class SuitePlan(Plan):
    """UnderSpecBench: every prompt once (full matrix) or a balanced sample of N (stratified)."""

    def allocator(self, campaign: Campaign) -> Allocator:
        if campaign.state:
            return ListAllocator.from_dict(campaign.state)
        params = CampaignParams.from_dict(campaign.params)
        return ListAllocator(params, suite_items(campaign.kind, params.n, params.seed))

    def items(self, campaign: Campaign) -> Any:
        return None

    def run_fields(self, campaign: Campaign, alloc: Allocator, slot: Slot) -> dict[str, Any]:
        pk, domain, surface, s_, b, r = suite_index().prompts[slot.scenario_id]
        return {
            "prompt_id": pk,
            "family": slot.cell[0],
            "domain": domain,
            "surface": surface,
            "s_level": s_,
            "b_level": b,
            "r_level": r,
        }


def suite_items(kind: str, n: int, seed: int) -> list[str]:
    variants = suite_index().variants
    if kind == CampaignKind.USB_FULL:
        return full_items(variants, seed)
    return sample_items(variants, n, seed)


PLANS: dict[str, Plan] = {
    CampaignKind.SNARE: SnarePlan(),
    CampaignKind.PAIRED: PairedPlan(),
    CampaignKind.USB_FULL: SuitePlan(),
    CampaignKind.USB_SAMPLE: SuitePlan(),
}


def register_plan(kind: str, plan: Plan) -> None:
    """Campaign kinds defined elsewhere (the UnderSpecBench suite) plug their allocation in here."""
    PLANS[kind] = plan


def plan_for(campaign: Campaign) -> Plan:
    try:
        return PLANS[campaign.kind]
    except KeyError:
        raise CampaignError(f"campaign kind {campaign.kind!r} has no allocator") from None


def allocator_for(campaign: Campaign) -> Allocator:
    return plan_for(campaign).allocator(campaign)


_pair_cache: dict[int, dict[tuple[str, str, str], list[PairItem]]] = {}


def pair_index(pool_id: int) -> dict[tuple[str, str, str], list[PairItem]]:
    """Verified (scenario, stripped twin) pairs of a pool by (archetype, consent, channel)."""
    with _pool_lock:
        cached = _pair_cache.get(pool_id)
    if cached is not None:
        return cached
    strata: dict[tuple[str, str, str], list[PairItem]] = {}
    twins = Candidate.objects.filter(
        pool_id=pool_id, variant="stripped", status=Candidate.Status.VERIFIED, twin_of__pool_rank__isnull=False
    ).values_list("digest", "twin_of__digest", "twin_of__archetype", "twin_of__consent", "twin_of__channel")
    for digest, kept, arch, consent, channel in twins:
        strata.setdefault((arch, consent, channel), []).append(PairItem(kept=kept, stripped=digest))
    # The twins' own rows must be reachable by digest too (pool_index covers retained scenarios).
    index = pool_index(pool_id)
    for pk, digest, tier, channel in Candidate.objects.filter(
        pool_id=pool_id, variant="stripped", status=Candidate.Status.VERIFIED
    ).values_list("pk", "digest", "tier", "channel"):
        index.by_digest.setdefault(digest, (pk, tier, channel))
    if strata:  # an empty answer is not cached: the twins may be built while this process lives
        with _pool_lock:
            _pair_cache[pool_id] = strata
    return strata


def _new_run(campaign: Campaign, alloc: Allocator, slot: Slot) -> Run:
    return Run(
        campaign=campaign,
        round=slot.round,
        slot=slot.index,
        slot_attempt=slot.attempt,
        repeat=slot.repeat,
        mutations=slot.mutations.to_dict(),
        enqueued_at=timezone.now(),
        **plan_for(campaign).run_fields(campaign, alloc, slot),
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
        Run.objects.filter(pk__in=recorded).update(recorded=True)
    if dropped:
        Run.objects.filter(pk__in=dropped, status=Run.Status.INVALID).update(
            status=Run.Status.DROPPED, finished_at=timezone.now()
        )
    to_enqueue: list[int] = []
    if alloc.done:
        campaign.status = Campaign.Status.COMPLETE
        campaign.finished_at = timezone.now()
    elif not alloc.outstanding:
        try:
            slots = alloc.next_round(plan_for(campaign).items(campaign))
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
            if Run.objects.filter(pk=run.pk, status=Run.Status.INVALID).update(
                status=Run.Status.QUEUED,
                slot_attempt=s.attempt,
                recorded=False,
                infra_failures=0,
                enqueued_at=timezone.now(),
            ):
                to_enqueue.append(run.pk)
    campaign.state = alloc.to_dict()
    campaign.round = alloc.round
    campaign.scored = alloc.scored
    campaign.triggers = alloc.triggers
    if finished:
        campaign.invalid = RunAttempt.objects.filter(run__campaign=campaign, validity__in=_INVALID).count()
    campaign.save(update_fields=["state", "round", "scored", "triggers", "invalid", "status", "finished_at"])
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


_INVALID = ("toolless_start", "timeout", "gateway_failure", "crash", "infra_error")


def _fail(campaign: Campaign, message: str) -> None:
    log.error("campaign %s failed: %s", campaign.pk, message)
    Campaign.objects.filter(pk=campaign.pk, status=Campaign.Status.RUNNING).update(
        status=Campaign.Status.FAILED, error=message, finished_at=timezone.now()
    )
    campaign.refresh_from_db()
    Run.objects.filter(campaign=campaign, status=Run.Status.QUEUED).update(status=Run.Status.CANCELLED)


def stop_campaign(campaign_id: int) -> bool:
    """Stop allocating; queued runs are cancelled, running ones finish and are kept."""
    with transaction.atomic():
        stopped = Campaign.objects.filter(pk=campaign_id, status__in=[Campaign.Status.RUNNING]).update(
            status=Campaign.Status.STOPPED, finished_at=timezone.now()
        )
        Run.objects.filter(campaign_id=campaign_id, status=Run.Status.QUEUED).update(status=Run.Status.CANCELLED)
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
    }


def _publish(topic: str, payload: dict[str, Any]) -> None:
    from runs.progress import publish

    try:
        publish(topic, payload)
    except Exception as exc:  # progress is best effort; a page resyncs over HTTP
        log.warning("could not publish progress on %s: %s", topic, exc)


# -- enqueueing ---------------------------------------------------------------------------------


def job_id(run_id: int, attempt: int) -> str:
    """One rq job id per (run, claim number): a re-enqueue of the same claim reuses it."""
    return f"run-{run_id}-{attempt}"


def enqueue_run(run_id: int) -> None:
    """Enqueue the run's job when the current transaction commits (at once outside one)."""

    def push() -> None:
        attempt = Run.objects.filter(pk=run_id).values_list("attempt", flat=True).first()
        if attempt is None:
            return
        try:
            _queue().enqueue(
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


def _queue() -> Any:
    import django_rq

    # "auto": this module already defers to the commit itself.
    return django_rq.get_queue(settings.RUNS_QUEUE, commit_mode="auto")


def _job_timeout(run_id: int) -> int:
    wall = Run.objects.filter(pk=run_id).values_list("campaign__sut__wall_limit_s", flat=True).first() or 1800
    return int(wall) + 900


# -- the watchdog -------------------------------------------------------------------------------


@dataclass
class ReconcileReport:
    reaped: int = 0
    reenqueued: int = 0
    advanced: int = 0


def reap_expired_leases(now: Any = None) -> int:
    """Abandon the attempts of runs whose worker stopped renewing its lease; re-queue the runs."""
    from runs.sandbox.reaper import remove_run_sandboxes

    reaped = 0
    for run in Run.objects.expired_leases(now).only("pk", "attempt", "infra_failures", "campaign_id"):
        with transaction.atomic():
            # Guarded by the attempt: if the worker renewed or finished in between, nothing happens.
            requeue = run.infra_failures + 1 < settings.RUN_MAX_INFRA_FAILURES
            changes: dict[str, Any] = {
                "infra_failures": F("infra_failures") + 1,
                "lease_owner": "",
                "lease_expires": None,
            }
            if requeue:
                changes.update(status=Run.Status.QUEUED, enqueued_at=timezone.now())
            else:
                changes.update(
                    status=Run.Status.INVALID,
                    validity="infra_error",
                    finished_at=timezone.now(),
                    recorded=False,
                )
            taken = Run.objects.filter(pk=run.pk, status=Run.Status.RUNNING, attempt=run.attempt).update(**changes)
            if not taken:
                continue
            RunAttempt.objects.filter(run_id=run.pk, number=run.attempt, status=RunAttempt.Status.RUNNING).update(
                status=RunAttempt.Status.ABANDONED,
                finished_at=timezone.now(),
                validity="infra_error",
                error="the worker stopped renewing its lease (killed or lost); attempt abandoned",
            )
            if requeue:
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
        report.reenqueued = reenqueue_lost_jobs()
    except Exception as exc:  # Redis unreachable: try again next pass
        log.warning("could not check the queue: %s", exc)
    for pk in Campaign.objects.filter(status=Campaign.Status.RUNNING).values_list("pk", flat=True):
        advance(pk)
        report.advanced += 1
    return report


def campaign_counts(campaign_ids: Sequence[int]) -> dict[int, dict[str, int]]:
    """Runs per status for each campaign (one GROUP BY)."""
    from django.db.models import Count

    out: dict[int, dict[str, int]] = {pk: {} for pk in campaign_ids}
    rows = (
        Run.objects.filter(campaign_id__in=campaign_ids)
        .values("campaign_id", "status")
        .annotate(n=Count("id"))
        .values_list("campaign_id", "status", "n")
    )
    for cid, status, n in rows:
        out[cid][status] = n
    return out
