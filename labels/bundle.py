"""Non-action labels of the exported runs: machine labels, validators' labels, adjudications, summaries.

Label rows have no uuids; each is identified by what the database already makes unique — a
machine label by (run, source), a human label by (run, validator), a summary by its run — and an
adjudication (history rows, never edited) by (run, curator, created).  So an import adds exactly
the labels this install lacks and a second import adds none.

People are named by username: a label is evidence of who judged what, and the agreement figures
count validators.  An import creates a missing author as an *inactive* account with no password
and no role (it can never log in), so the labels keep their authors without granting anyone
access.  The validation queues the labels were taken through travel with their sampled items (the
exported runs' only); assignments — who was served what, and skips — are workflow state, not
results, and stay behind.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.apps import apps
from django.contrib.auth import get_user_model
from django.db import IntegrityError

from harness.bundle.archive import BundleWriter
from harness.bundle.format import BundleError
from runs.bundle.records import Codec
from runs.bundle.sections.base import ExportScope, ImportState, Section, dumps, read_jsonl, register
from runs.models import Campaign, Run

FOLDER = "labels"
QUEUES = f"{FOLDER}/queues.jsonl"
ITEMS = f"{FOLDER}/queue_items.jsonl"
JUDGE = f"{FOLDER}/judge.jsonl"
HUMAN = f"{FOLDER}/human.jsonl"
ADJUDICATIONS = f"{FOLDER}/adjudications.jsonl"
SUMMARIES = f"{FOLDER}/summaries.jsonl"
# Verdict validation (labels.verdicts): queues with their sampled items (the oracle's verdict as
# sampled, and the sampling weight), the validators' verdict labels and the curators' rulings.
VQUEUES = f"{FOLDER}/verdict_queues.jsonl"
VITEMS = f"{FOLDER}/verdict_items.jsonl"
VLABELS = f"{FOLDER}/verdict_labels.jsonl"
VRULINGS = f"{FOLDER}/verdict_adjudications.jsonl"
BATCH = 1000


def _codecs() -> dict[str, Codec]:
    from labels.models import (
        Adjudication,
        HumanLabel,
        JudgeLabel,
        LabelSummary,
        QueueItem,
        ValidationQueue,
        VerdictAdjudication,
        VerdictLabel,
        VerdictQueue,
        VerdictQueueItem,
    )

    return {
        # created_by: who built the queue is not a result; the campaigns M2M is written as uuids.
        QUEUES: Codec(ValidationQueue, drop=("created_by",)),
        ITEMS: Codec(QueueItem, refs=("queue", "run")),
        JUDGE: Codec(JudgeLabel, refs=("run",)),
        HUMAN: Codec(HumanLabel, refs=("run", "validator", "queue")),
        ADJUDICATIONS: Codec(Adjudication, refs=("run", "curator")),
        SUMMARIES: Codec(LabelSummary, refs=("run",)),
        VQUEUES: Codec(VerdictQueue, drop=("created_by",)),
        VITEMS: Codec(VerdictQueueItem, refs=("queue", "run")),
        VLABELS: Codec(VerdictLabel, refs=("run", "validator", "queue")),
        # exported_to is a path on the exporting machine: where its regression case was written.
        VRULINGS: Codec(VerdictAdjudication, refs=("run", "curator"), drop=("exported_to",)),
    }


def _key(path: str, record: dict[str, Any]) -> tuple[Any, ...]:
    """A label record's natural key (the run's uuid first)."""
    if path == JUDGE:
        return (record["run"], record["source"])
    if path in (HUMAN, VLABELS):
        return (record["run"], record["validator"])
    if path in (ADJUDICATIONS, VRULINGS):
        return (record["run"], record["curator"], record["created"])
    if path == SUMMARIES:
        return (record["run"],)
    if path in (ITEMS, VITEMS):
        return (record["queue"], record["run"])
    raise KeyError(path)


class LabelsSection(Section):
    name = "labels"
    order = 80
    files = (QUEUES, ITEMS, JUDGE, HUMAN, ADJUDICATIONS, SUMMARIES, VQUEUES, VITEMS, VLABELS, VRULINGS)

    def available(self) -> bool:
        return apps.is_installed("labels")

    # -- export ---------------------------------------------------------------------------------

    def export(self, scope: ExportScope, out: BundleWriter) -> Iterator[None]:
        from labels.models import (
            Adjudication,
            HumanLabel,
            JudgeLabel,
            LabelSummary,
            QueueItem,
            ValidationQueue,
            VerdictAdjudication,
            VerdictLabel,
            VerdictQueue,
            VerdictQueueItem,
        )

        codecs = _codecs()
        runs = Run.objects.filter(campaign_id__in=scope.campaign_ids)
        campaign_uuids = {pk: str(u) for pk, u in Campaign.objects.values_list("pk", "uuid")}
        for path, model, counted in (
            (QUEUES, ValidationQueue, "validation queues"),
            (VQUEUES, VerdictQueue, "verdict queues"),
        ):
            queues = model.objects.filter(items__run__in=runs).distinct().order_by("created", "pk")
            with out.open(path) as fh:
                for q in queues.prefetch_related("campaigns"):
                    record = codecs[path].dump_instance(q)
                    record["campaigns"] = sorted(campaign_uuids[c.pk] for c in q.campaigns.all())
                    fh.write(dumps(record))
                    scope.counts[counted] += 1
            yield
        tables: list[tuple[str, Any, dict[str, str], tuple[str, ...]]] = [
            (ITEMS, QueueItem, {"queue": "queue__name"}, ("queue__name", "position")),
            (JUDGE, JudgeLabel, {}, ("run__uuid", "source")),
            (
                HUMAN,
                HumanLabel,
                {"validator": "validator__username", "queue": "queue__name"},
                ("run__uuid", "validator__username"),
            ),
            (ADJUDICATIONS, Adjudication, {"curator": "curator__username"}, ("run__uuid", "created", "pk")),
            (SUMMARIES, LabelSummary, {}, ("run__uuid",)),
            (VITEMS, VerdictQueueItem, {"queue": "queue__name"}, ("queue__name", "position")),
            (
                VLABELS,
                VerdictLabel,
                {"validator": "validator__username", "queue": "queue__name"},
                ("run__uuid", "validator__username"),
            ),
            (VRULINGS, VerdictAdjudication, {"curator": "curator__username"}, ("run__uuid", "created", "pk")),
        ]
        for path, model, refs, order in tables:
            codec = codecs[path]
            columns = {"run": "run__uuid", **refs}
            with out.open(path) as fh:
                rows = model.objects.filter(run__campaign_id__in=scope.campaign_ids).order_by(*order)
                for row in rows.values(*codec.names, *columns.values()).iterator(chunk_size=BATCH):
                    record = codec.dump(row)
                    for name, column in columns.items():
                        record[name] = None if row[column] is None else str(row[column])
                    fh.write(dumps(record))
                    scope.counts[f"labels: {path.rsplit('/', 1)[-1].removesuffix('.jsonl')}"] += 1
            yield

    # -- import ---------------------------------------------------------------------------------

    def plan(self, state: ImportState) -> int:
        from labels.models import ValidationQueue, VerdictQueue

        codecs = _codecs()
        problems: list[str] = []
        new = 0
        for path, model, what in ((QUEUES, ValidationQueue, "validation"), (VQUEUES, VerdictQueue, "verdict")):
            for record in read_jsonl(state.root / path):
                found = model.objects.filter(name=record["name"]).first()
                if found is None:
                    new += 1
                    continue
                mine = codecs[path].dump_instance(found)
                same = ("stratify", "allocation", "size", "overlap", "overlap_share", "seed")
                differs = [k for k in same if mine.get(k) != record.get(k)]
                if differs:
                    problems.append(
                        f"{what} queue {record['name']!r} exists here with other parameters ({', '.join(differs)})"
                    )
        existing = self._existing(state)
        for path in (ITEMS, JUDGE, HUMAN, ADJUDICATIONS, SUMMARIES, VITEMS, VLABELS, VRULINGS):
            have = existing[path]
            new += sum(1 for r in read_jsonl(state.root / path) if _key(path, r) not in have)
        if problems:
            raise BundleError("; ".join(problems) + ": rename the queue here or import into another install")
        state.decisions["labels.existing"] = existing
        return new

    def _existing(self, state: ImportState) -> dict[str, set[tuple[Any, ...]]]:
        """Natural keys of the labels already here, for the runs the bundle names that exist here."""
        from labels.models import (
            Adjudication,
            HumanLabel,
            JudgeLabel,
            LabelSummary,
            QueueItem,
            VerdictAdjudication,
            VerdictLabel,
            VerdictQueueItem,
        )

        uuids: set[str] = set()
        for path in (ITEMS, JUDGE, HUMAN, ADJUDICATIONS, SUMMARIES, VITEMS, VLABELS, VRULINGS):
            uuids |= {str(r["run"]) for r in read_jsonl(state.root / path)}
        runs = list(Run.objects.filter(uuid__in=list(uuids)).values_list("pk", flat=True)) if uuids else []

        def keys(model: Any, *columns: str) -> set[tuple[Any, ...]]:
            rows = model.objects.filter(run_id__in=runs).values_list(*columns)
            return {tuple(str(v) if not isinstance(v, str) else v for v in row) for row in rows}

        def rulings(model: Any) -> set[tuple[Any, ...]]:
            return {
                (str(u), name, created.isoformat())
                for u, name, created in model.objects.filter(run_id__in=runs).values_list(
                    "run__uuid", "curator__username", "created"
                )
            }

        def items(model: Any) -> set[tuple[Any, ...]]:
            return {
                (q, str(u)) for q, u in model.objects.filter(run_id__in=runs).values_list("queue__name", "run__uuid")
            }

        return {
            ITEMS: items(QueueItem),
            JUDGE: keys(JudgeLabel, "run__uuid", "source"),
            HUMAN: keys(HumanLabel, "run__uuid", "validator__username"),
            ADJUDICATIONS: rulings(Adjudication),
            SUMMARIES: keys(LabelSummary, "run__uuid"),
            VITEMS: items(VerdictQueueItem),
            VLABELS: keys(VerdictLabel, "run__uuid", "validator__username"),
            VRULINGS: rulings(VerdictAdjudication),
        }

    def load(self, state: ImportState) -> None:
        from labels.models import (
            Adjudication,
            HumanLabel,
            JudgeLabel,
            LabelSummary,
            QueueItem,
            ValidationQueue,
            VerdictAdjudication,
            VerdictLabel,
            VerdictQueue,
            VerdictQueueItem,
        )

        codecs = _codecs()
        existing: dict[str, set[tuple[Any, ...]]] = state.decisions.get("labels.existing") or self._existing(state)
        queues: dict[str, int] = {}
        vqueues: dict[str, int] = {}
        for path, model, known, counted in (
            (QUEUES, ValidationQueue, queues, "validation queues"),
            (VQUEUES, VerdictQueue, vqueues, "verdict queues"),
        ):
            for record in read_jsonl(state.root / path):
                fields = codecs[path].load(record)
                queue = model.objects.filter(name=fields["name"]).first()
                if queue is None:
                    queue = model.objects.create(**fields)
                    state.created[counted] += 1
                ids = [state.campaigns[u] for u in record.get("campaigns") or [] if u in state.campaigns]
                ids += list(
                    Campaign.objects.filter(
                        uuid__in=[u for u in record.get("campaigns") or [] if u not in state.campaigns]
                    ).values_list("pk", flat=True)
                )
                if ids:
                    queue.campaigns.add(*ids)
                known[queue.name] = queue.pk
        run_ids = dict(state.runs)
        tables: list[tuple[str, Any]] = [
            (ITEMS, QueueItem),
            (JUDGE, JudgeLabel),
            (HUMAN, HumanLabel),
            (ADJUDICATIONS, Adjudication),
            (SUMMARIES, LabelSummary),
            (VITEMS, VerdictQueueItem),
            (VLABELS, VerdictLabel),
            (VRULINGS, VerdictAdjudication),
        ]
        for path, model in tables:
            batch = []
            for record in read_jsonl(state.root / path):
                if _key(path, record) in existing[path]:
                    state.present[f"labels: {path.rsplit('/', 1)[-1]}"] += 1
                    continue
                fields = codecs[path].load(record)
                fields["run_id"] = self._run(str(record["run"]), run_ids)
                named = vqueues if path in (VITEMS, VLABELS) else queues
                if path in (ITEMS, VITEMS):
                    fields["queue_id"] = named[str(record["queue"])]
                if path in (HUMAN, VLABELS):
                    fields["validator_id"] = self._user(str(record["validator"]), state)
                    fields["queue_id"] = named.get(str(record["queue"])) if record.get("queue") else None
                if path in (ADJUDICATIONS, VRULINGS):
                    fields["curator_id"] = self._user(str(record["curator"]), state)
                batch.append(model(**fields))
                if len(batch) >= BATCH:
                    self._create(model, batch, path, state)
                    batch = []
            self._create(model, batch, path, state)

    def _create(self, model: Any, batch: list[Any], path: str, state: ImportState) -> None:
        if not batch:
            return
        try:
            model.objects.bulk_create(batch)
        except IntegrityError as exc:
            raise BundleError(f"{path}: labels collide with this install's ({exc})") from None
        state.created[f"labels: {path.rsplit('/', 1)[-1].removesuffix('.jsonl')}"] += len(batch)

    def _run(self, uuid: str, known: dict[str, int]) -> int:
        if uuid not in known:
            pk = Run.objects.filter(uuid=uuid).values_list("pk", flat=True).first()
            if pk is None:
                raise BundleError(f"a label names run {uuid}, which is neither in the bundle nor here")
            known[uuid] = pk
        return known[uuid]

    def _user(self, username: str, state: ImportState) -> int:
        if username not in state.users:
            user_model = get_user_model()
            user = user_model._default_manager.filter(username=username).first()
            if user is None:
                user = user_model(username=username, is_active=False)
                user.set_unusable_password()
                user.save()
                state.created["inactive label authors"] += 1
            state.users[username] = user.pk
        return state.users[username]


register(LabelsSection())
