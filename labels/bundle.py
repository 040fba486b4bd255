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
BATCH = 1000


def _codecs() -> dict[str, Codec]:
    from labels.models import Adjudication, HumanLabel, JudgeLabel, LabelSummary, QueueItem, ValidationQueue

    return {
        # created_by: who built the queue is not a result; the campaigns M2M is written as uuids.
        QUEUES: Codec(ValidationQueue, drop=("created_by",)),
        ITEMS: Codec(QueueItem, refs=("queue", "run")),
        JUDGE: Codec(JudgeLabel, refs=("run",)),
        HUMAN: Codec(HumanLabel, refs=("run", "validator", "queue")),
        ADJUDICATIONS: Codec(Adjudication, refs=("run", "curator")),
        SUMMARIES: Codec(LabelSummary, refs=("run",)),
    }


def _key(path: str, record: dict[str, Any]) -> tuple[Any, ...]:
    """A label record's natural key (the run's uuid first)."""
    if path == JUDGE:
        return (record["run"], record["source"])
    if path == HUMAN:
        return (record["run"], record["validator"])
    if path == ADJUDICATIONS:
        return (record["run"], record["curator"], record["created"])
    if path == SUMMARIES:
        return (record["run"],)
    if path == ITEMS:
        return (record["queue"], record["run"])
    raise KeyError(path)


class LabelsSection(Section):
    name = "labels"
    order = 80
    files = (QUEUES, ITEMS, JUDGE, HUMAN, ADJUDICATIONS, SUMMARIES)

    def available(self) -> bool:
        return apps.is_installed("labels")

    # -- export ---------------------------------------------------------------------------------

    def export(self, scope: ExportScope, out: BundleWriter) -> Iterator[None]:
        from labels.models import Adjudication, HumanLabel, JudgeLabel, LabelSummary, QueueItem, ValidationQueue

        codecs = _codecs()
        runs = Run.objects.filter(campaign_id__in=scope.campaign_ids)
        campaign_uuids = {pk: str(u) for pk, u in Campaign.objects.values_list("pk", "uuid")}
        queues = ValidationQueue.objects.filter(items__run__in=runs).distinct().order_by("created", "pk")
        with out.open(QUEUES) as fh:
            for q in queues.prefetch_related("campaigns"):
                record = codecs[QUEUES].dump_instance(q)
                record["campaigns"] = sorted(campaign_uuids[c.pk] for c in q.campaigns.all())
                fh.write(dumps(record))
                scope.counts["validation queues"] += 1
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
        from labels.models import ValidationQueue

        codecs = _codecs()
        problems: list[str] = []
        new = 0
        for record in read_jsonl(state.root / QUEUES):
            found = ValidationQueue.objects.filter(name=record["name"]).first()
            if found is None:
                new += 1
                continue
            mine = codecs[QUEUES].dump_instance(found)
            same = ("stratify", "allocation", "size", "overlap", "overlap_share", "seed")
            differs = [k for k in same if mine.get(k) != record.get(k)]
            if differs:
                problems.append(
                    f"validation queue {record['name']!r} exists here with other parameters ({', '.join(differs)})"
                )
        existing = self._existing(state)
        for path in (ITEMS, JUDGE, HUMAN, ADJUDICATIONS, SUMMARIES):
            have = existing[path]
            new += sum(1 for r in read_jsonl(state.root / path) if _key(path, r) not in have)
        if problems:
            raise BundleError("; ".join(problems) + ": rename the queue here or import into another install")
        state.decisions["labels.existing"] = existing
        return new

    def _existing(self, state: ImportState) -> dict[str, set[tuple[Any, ...]]]:
        """Natural keys of the labels already here, for the runs the bundle names that exist here."""
        from labels.models import Adjudication, HumanLabel, JudgeLabel, LabelSummary, QueueItem

        uuids: set[str] = set()
        for path in (ITEMS, JUDGE, HUMAN, ADJUDICATIONS, SUMMARIES):
            uuids |= {str(r["run"]) for r in read_jsonl(state.root / path)}
        runs = list(Run.objects.filter(uuid__in=list(uuids)).values_list("pk", flat=True)) if uuids else []

        def keys(model: Any, *columns: str) -> set[tuple[Any, ...]]:
            rows = model.objects.filter(run_id__in=runs).values_list(*columns)
            return {tuple(str(v) if not isinstance(v, str) else v for v in row) for row in rows}

        adjudications = {
            (str(u), name, created.isoformat())
            for u, name, created in Adjudication.objects.filter(run_id__in=runs).values_list(
                "run__uuid", "curator__username", "created"
            )
        }
        return {
            ITEMS: {
                (q, str(u))
                for q, u in QueueItem.objects.filter(run_id__in=runs).values_list("queue__name", "run__uuid")
            },
            JUDGE: keys(JudgeLabel, "run__uuid", "source"),
            HUMAN: keys(HumanLabel, "run__uuid", "validator__username"),
            ADJUDICATIONS: adjudications,
            SUMMARIES: keys(LabelSummary, "run__uuid"),
        }

    def load(self, state: ImportState) -> None:
        from labels.models import Adjudication, HumanLabel, JudgeLabel, LabelSummary, QueueItem, ValidationQueue

        codecs = _codecs()
        existing: dict[str, set[tuple[Any, ...]]] = state.decisions.get("labels.existing") or self._existing(state)
        queues: dict[str, int] = {}
        for record in read_jsonl(state.root / QUEUES):
            fields = codecs[QUEUES].load(record)
            queue = ValidationQueue.objects.filter(name=fields["name"]).first()
            if queue is None:
                queue = ValidationQueue.objects.create(**fields)
                state.created["validation queues"] += 1
            ids = [state.campaigns[u] for u in record.get("campaigns") or [] if u in state.campaigns]
            ids += list(
                Campaign.objects.filter(
                    uuid__in=[u for u in record.get("campaigns") or [] if u not in state.campaigns]
                ).values_list("pk", flat=True)
            )
            if ids:
                queue.campaigns.add(*ids)
            queues[queue.name] = queue.pk
        run_ids = dict(state.runs)
        tables: list[tuple[str, Any]] = [
            (ITEMS, QueueItem),
            (JUDGE, JudgeLabel),
            (HUMAN, HumanLabel),
            (ADJUDICATIONS, Adjudication),
            (SUMMARIES, LabelSummary),
        ]
        for path, model in tables:
            batch = []
            for record in read_jsonl(state.root / path):
                if _key(path, record) in existing[path]:
                    state.present[f"labels: {path.rsplit('/', 1)[-1]}"] += 1
                    continue
                fields = codecs[path].load(record)
                fields["run_id"] = self._run(str(record["run"]), run_ids)
                if path == ITEMS:
                    fields["queue_id"] = queues[str(record["queue"])]
                if path == HUMAN:
                    fields["validator_id"] = self._user(str(record["validator"]), state)
                    fields["queue_id"] = queues.get(str(record["queue"])) if record.get("queue") else None
                if path == ADJUDICATIONS:
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
