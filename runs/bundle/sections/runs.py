"""Runs, their attempts, their transcripts (chained) and their evidence files.

``runs.jsonl`` holds one line per *attempt* — the run's record, the attempt's record, whether it
is the attempt the run counts, and the run's chain (head, steps) — and one line with
``"attempt": null`` for a run that never executed (cancelled while queued).  The lines of one run
are consecutive.  ``events/<run uuid>.jsonl`` holds the run's transcript events, every attempt in
number order, each line with its chain value; ``evidence/<attempt uuid>/`` the attempt's evidence
files (gateway.jsonl, agent.stdout, agent.stderr, run.json, whatever else its folder held).

Export reads runs in chunks of ``CHUNK`` (three queries per chunk: runs, attempts, events), so
its memory is one chunk's transcripts whatever the campaign's size.  Import writes them back in
chunks too — runs, then attempts, then the counted-attempt links, then the events (PostgreSQL
``COPY`` for those: a campaign's transcripts are most of its rows) — and copies the evidence into
``EVIDENCE_DIR/<campaign uuid>/<run id>/<attempt number>/``, where a worker would have put it.
"""

from __future__ import annotations

import json
import os
import shutil
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection

from harness.bundle.archive import BundleWriter
from harness.bundle.format import RUNS, BundleError, Chain, chained_line, events_path, evidence_path, path_problem
from pool.models import Candidate
from runs.bundle.records import Codec
from runs.bundle.sections.base import ExportScope, ImportState, Section, dumps, read_jsonl, register
from runs.bundle.sections.pool import ref_of
from runs.models import Campaign, Run, RunAttempt, RunEvent

CHUNK = 100
EVENT_BATCH = 5000

PROMPT_MODEL = "suite.FamilyPrompt"
# A run's UnderSpecBench prompt (whatever the field is named) travels as its natural key: family
# slug and S/B/R levels, with the prompt's digest as the check.
RUN = Codec(Run, refs=("campaign", "scenario", "counted_attempt"), ref_models=(PROMPT_MODEL,))
PROMPT_PARTS = ("family__slug", "s", "b", "r", "digest")
# evidence_dir is a folder on the exporting machine; the files themselves travel instead.
ATTEMPT = Codec(RunAttempt, refs=("run",), drop=("evidence_dir",))
EVENT = Codec(RunEvent, refs=("attempt",))


def _batched(items: Sequence[int], size: int) -> Iterator[list[int]]:
    it = iter(items)
    while batch := list(islice(it, size)):
        yield batch


def evidence_files(folder: str) -> list[tuple[str, Path]] | None:
    """(relative path, file) of every regular file under ``folder``; None when it is gone."""
    base = Path(folder)
    if not base.is_dir():
        return None
    found: list[tuple[str, Path]] = []
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(dirpath) / name
            if path.is_symlink() or not path.is_file():
                continue  # an agent cannot plant a link to the host's files into a bundle
            found.append((path.relative_to(base).as_posix(), path))
    return found


class RunsSection(Section):
    name = "runs"
    order = 70
    files = (RUNS, "events/<run uuid>.jsonl", "evidence/<attempt uuid>/<file>")

    # -- export ---------------------------------------------------------------------------------

    def export(self, scope: ExportScope, out: BundleWriter) -> Iterator[None]:
        campaigns = dict(Campaign.objects.filter(pk__in=scope.campaign_ids).values_list("pk", "uuid"))
        prompts = list(RUN.refs_to_models())
        event_names = EVENT.names
        pool_refs: dict[int, str] = {}
        missing_evidence = 0
        with out.open(RUNS) as runs_fh:
            for cid in scope.campaign_ids:
                pks = list(
                    Run.objects.filter(campaign_id=cid)
                    .order_by("round", "slot", "member", "pk")
                    .values_list("pk", flat=True)
                )
                for chunk in _batched(pks, CHUNK):
                    runs, attempts, attempt_uuids, events = self._chunk_rows(chunk, prompts)
                    scenarios = self._scenario_refs({r["scenario_id"] for r in runs.values()} - {None}, pool_refs)
                    for pk in chunk:
                        run = runs[pk]
                        run_uuid = str(run["uuid"])
                        chain = Chain(run_uuid)
                        group = attempts.get(pk, [])
                        if any(events.get(a["id"]) for a in group):
                            with out.open(events_path(run_uuid)) as efh:
                                for a in group:
                                    for values in events.get(a["id"], ()):
                                        step = {
                                            "attempt": attempt_uuids[a["id"]],
                                            **dict(zip(event_names, values, strict=True)),
                                        }
                                        efh.write(chained_line(chain, step))
                            scope.counts["trace steps"] += chain.steps
                        record = RUN.dump(run)
                        record["campaign"] = str(campaigns[cid])
                        record["scenario"] = scenarios.get(run["scenario_id"]) if run["scenario_id"] else None
                        record["counted_attempt"] = (
                            attempt_uuids.get(run["counted_attempt_id"]) if run["counted_attempt_id"] else None
                        )
                        for name in prompts:
                            key = [run[f"{name}__{part}"] for part in PROMPT_PARTS]
                            record[name] = (
                                None
                                if key[0] is None
                                else dict(zip(("family", "s", "b", "r", "digest"), key, strict=True))
                            )
                        head = {"head": chain.head, "steps": chain.steps}
                        if not group:
                            runs_fh.write(dumps({"run": record, "attempt": None, "counted": False, "chain": head}))
                        for a in group:
                            attempt = ATTEMPT.dump(a)
                            attempt["evidence_files"], gone = self._evidence(
                                out, attempt_uuids[a["id"]], a["evidence_dir"]
                            )
                            missing_evidence += gone
                            line = {
                                "run": record,
                                "attempt": attempt,
                                "counted": a["id"] == run["counted_attempt_id"],
                                "chain": head,
                            }
                            runs_fh.write(dumps(line))
                            scope.counts["attempts"] += 1
                        scope.counts["runs"] += 1
                        yield
        if missing_evidence:
            scope.warnings.append(
                f"{missing_evidence} attempts name an evidence folder that is no longer on disk; "
                "their records are in the bundle, their files are not"
            )
        yield

    def _chunk_rows(
        self, chunk: list[int], prompts: list[str]
    ) -> tuple[
        dict[int, dict[str, Any]], dict[int, list[dict[str, Any]]], dict[int, str], dict[int, list[tuple[Any, ...]]]
    ]:
        """One chunk's runs, their attempts (in number order) and their events (in seq order): three queries."""
        prompt_columns = [f"{name}__{part}" for name in prompts for part in PROMPT_PARTS]
        runs = {
            r["id"]: r
            for r in Run.objects.filter(pk__in=chunk).values(
                "id", "scenario_id", "counted_attempt_id", *RUN.names, *prompt_columns
            )
        }
        attempts: dict[int, list[dict[str, Any]]] = defaultdict(list)
        for a in (
            RunAttempt.objects.filter(run_id__in=chunk)
            .order_by("run_id", "number")
            .values("id", "run_id", "evidence_dir", *ATTEMPT.names)
        ):
            attempts[a["run_id"]].append(a)
        attempt_uuids = {a["id"]: str(a["uuid"]) for group in attempts.values() for a in group}
        events: dict[int, list[tuple[Any, ...]]] = defaultdict(list)
        for row in (
            RunEvent.objects.filter(attempt_id__in=list(attempt_uuids))
            .order_by("attempt_id", "seq")
            .values_list("attempt_id", *EVENT.names)
        ):
            events[row[0]].append(row[1:])
        return runs, attempts, attempt_uuids, events

    def _scenario_refs(self, ids: set[int], pool_refs: dict[int, str]) -> dict[int, dict[str, Any]]:
        from pool.models import PoolVersion

        rows = list(Candidate.objects.filter(pk__in=ids).values_list("pk", "pool_id", "position", "digest"))
        missing = {pool_id for _, pool_id, _, _ in rows} - set(pool_refs)
        for p in PoolVersion.objects.filter(pk__in=missing):
            pool_refs[p.pk] = ref_of(p)
        return {pk: {"pool": pool_refs[pool_id], "position": pos, "digest": d} for pk, pool_id, pos, d in rows}

    def _evidence(self, out: BundleWriter, attempt_uuid: str, folder: str) -> tuple[list[str], int]:
        """The attempt's evidence files into the bundle; their sizes and hashes are the manifest's."""
        if not folder:
            return [], 0
        files = evidence_files(folder)
        if files is None:
            return [], 1
        for rel, path in files:
            out.add_file(evidence_path(attempt_uuid, rel), path)
        return [rel for rel, _ in files], 0

    # -- import ---------------------------------------------------------------------------------

    def plan(self, state: ImportState) -> int:
        # Runs of a new campaign are new by construction (uuids are unique; a clash is refused by
        # the database during load, rolling everything back). Counting them needs no second pass.
        return 0

    def load(self, state: ImportState) -> None:
        evidence_root = Path(settings.EVIDENCE_DIR)
        groups: list[list[dict[str, Any]]] = []
        current: list[dict[str, Any]] = []
        seen: set[str] = set()
        for line in read_jsonl(state.root / RUNS):
            uuid = str(line["run"]["uuid"])
            if current and str(current[0]["run"]["uuid"]) != uuid:
                groups.append(current)
                current = []
                if len(groups) >= CHUNK:
                    self._load_chunk(groups, state, evidence_root)
                    groups = []
            if not current:
                if uuid in seen:
                    raise BundleError(f"{RUNS}: the lines of run {uuid} are not consecutive")
                seen.add(uuid)
            current.append(line)
        if current:
            groups.append(current)
        self._load_chunk(groups, state, evidence_root)

    def _load_chunk(self, groups: list[list[dict[str, Any]]], state: ImportState, evidence_root: Path) -> None:
        todo = []
        for group in groups:
            record = group[0]["run"]
            campaign = str(record["campaign"])
            if campaign in state.skipped_campaigns:
                state.present["runs"] += 1
                continue
            if campaign not in state.campaigns:
                raise BundleError(f"run {record['uuid']} belongs to campaign {campaign}, which campaigns.jsonl lacks")
            todo.append(group)
        if not todo:
            return
        runs = [self._run(group[0]["run"], state) for group in todo]
        try:
            made = Run.objects.bulk_create(runs)
        except IntegrityError as exc:
            raise BundleError(f"runs of the bundle collide with runs already here ({exc})") from None
        attempts: list[RunAttempt] = []
        counted: list[tuple[Run, int]] = []
        for run, group in zip(made, todo, strict=True):
            state.runs[str(run.uuid)] = run.pk
            campaign = str(group[0]["run"]["campaign"])
            for line in group:
                if line.get("attempt") is None:
                    continue
                attempts.append(self._attempt(line["attempt"], run, campaign, evidence_root, state))
                if line.get("counted"):
                    counted.append((run, len(attempts) - 1))
        try:
            made_attempts = RunAttempt.objects.bulk_create(attempts)
        except IntegrityError as exc:
            raise BundleError(f"attempts of the bundle collide with attempts already here ({exc})") from None
        for a in made_attempts:
            state.attempts[str(a.uuid)] = a.pk
        for run, index in counted:
            run.counted_attempt_id = made_attempts[index].pk
        Run.objects.bulk_update([run for run, _ in counted], ["counted_attempt"], batch_size=500)
        state.created["runs"] += len(made)
        state.created["attempts"] += len(made_attempts)
        for run, group in zip(made, todo, strict=True):
            if int(group[0]["chain"]["steps"]):
                state.created["trace steps"] += self._events(state.root / events_path(str(run.uuid)), state)

    def _run(self, record: dict[str, Any], state: ImportState) -> Run:
        fields = RUN.load(record)
        scenario_id = None
        ref = record.get("scenario")
        if ref:
            scenario_id = state.candidates.get((str(ref["pool"]), int(ref["position"])))
            if scenario_id is None:
                raise BundleError(f"run {record['uuid']} ran scenario {ref['position']} of a pool the bundle lacks")
        for name in RUN.refs_to_models():
            fields[f"{name}_id"] = self._prompt(record.get(name), record["uuid"], state)
        return Run(campaign_id=state.campaigns[str(record["campaign"])], scenario_id=scenario_id, **fields)

    def _prompt(self, key: dict[str, Any] | None, run: str, state: ImportState) -> int | None:
        if not key:
            return None
        known = state.decisions.get("runs.prompts")
        if known is None:
            # The model Run.prompt points at (the suite's FamilyPrompt), reached through the field
            # so that runs never imports the suite app built on it.
            prompts = Run._meta.get_field("prompt").related_model
            rows = prompts._default_manager.values_list("family__slug", "s", "b", "r", "pk", "digest")
            known = state.decisions["runs.prompts"] = {tuple(r[:4]): (r[4], r[5]) for r in rows}
        found = known.get((key["family"], key["s"], key["b"], key["r"]))
        variant = f"{key['family']} S{key['s']}B{key['b']}R{key['r']}"
        if found is None:
            raise BundleError(f"run {run} ran prompt {variant}, which this install's suite lacks")
        if found[1] != key["digest"]:
            raise BundleError(
                f"run {run}: prompt {variant} reads differently here "
                f"(digest {found[1][:12]}, bundle {str(key['digest'])[:12]}): this install's suite is another version"
            )
        return int(found[0])

    def _attempt(
        self, record: dict[str, Any], run: Run, campaign: str, evidence_root: Path, state: ImportState
    ) -> RunAttempt:
        fields = ATTEMPT.load(record)
        folder = ""
        files = record.get("evidence_files") or []
        if files:
            run_dir = evidence_root / campaign / str(run.pk)
            if not run_dir.exists():
                state.new_paths.append(run_dir)
            dest = run_dir / str(fields["number"])
            # An archive was extracted into a scratch folder for this import alone: its files can
            # be moved (a rename on the same filesystem) rather than written a second time.
            move = bool(state.decisions.get("move_evidence"))
            for rel in files:
                # The names come from the bundle: one climbing out would write outside EVIDENCE_DIR.
                problem = path_problem(str(rel))
                if problem:
                    raise BundleError(f"attempt {fields['uuid']}: evidence file {rel!r} {problem}")
                source = state.root / evidence_path(str(fields["uuid"]), rel)
                target = dest / rel
                if state.decisions.get("runs.last_dir") != target.parent:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    state.decisions["runs.last_dir"] = target.parent
                if move:
                    try:
                        os.replace(source, target)
                        continue
                    except OSError:
                        pass  # another filesystem: copy
                shutil.copyfile(source, target)
            state.created["evidence files"] += len(files)
            folder = str(dest)
        return RunAttempt(run=run, evidence_dir=folder, **fields)

    def _events(self, path: Path, state: ImportState) -> int:
        count = 0
        batch: list[tuple[int, int, str, str, str]] = []
        for step in read_jsonl(path):
            step.pop("h", None)
            try:
                attempt_id = state.attempts[str(step["attempt"])]
            except KeyError:
                raise BundleError(
                    f"{path.name}: an event names attempt {step.get('attempt')}, which no run line has"
                ) from None
            batch.append(
                (
                    attempt_id,
                    int(step["seq"]),
                    str(step["kind"]),
                    str(step.get("summary", "")),
                    json.dumps(step.get("data", {}), ensure_ascii=False),
                )
            )
            if len(batch) >= EVENT_BATCH:
                insert_events(batch)
                count += len(batch)
                batch = []
        insert_events(batch)
        return count + len(batch)


def insert_events(rows: Iterable[tuple[int, int, str, str, str]]) -> None:
    """Insert (attempt id, seq, kind, summary, data as JSON text) rows; COPY on PostgreSQL."""
    rows = list(rows)
    if not rows:
        return
    if connection.vendor == "postgresql":
        table = RunEvent._meta.db_table
        by_name = {f.name: str(f.column) for f in RunEvent._meta.concrete_fields}
        columns = ", ".join(by_name[name] for name in ("attempt", "seq", "kind", "summary", "data"))
        with connection.cursor() as cursor, cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        return
    RunEvent.objects.bulk_create(
        [RunEvent(attempt_id=a, seq=s, kind=k, summary=m, data=json.loads(d)) for a, s, k, m, d in rows],
        batch_size=1000,
    )


register(RunsSection())
