"""The pool versions the campaigns drew from, and the scenarios their runs actually ran.

A pool is identified by what built it — library digest, pool seed, target size (its unique key)
— and a scenario by its position in the pool's Cartesian enumeration, with its content digest as
the check: a pool build is deterministic, so the same key on two installs means the same
scenarios, and a mismatching digest means the bundle and this install disagree about the pool,
which is refused.  Only the scenarios the runs used travel (plus the kept scenario each
consent-stripped twin pairs with): the other ~1,000 are reproducible from the library and the
seed, and an imported campaign is a record to audit, not one to resume.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.db import IntegrityError

from harness.bundle.archive import BundleWriter
from harness.bundle.format import BundleError
from pool.models import Candidate, LibraryVersion, PoolVersion
from runs.bundle.records import Codec
from runs.bundle.sections.base import ExportScope, ImportState, Section, dumps, pool_ref, read_jsonl, register
from runs.models import Run

POOLS = "pool/versions.jsonl"
SCENARIOS = "pool/scenarios.jsonl"
BATCH = 200

POOL = Codec(PoolVersion, refs=("library_version",))
# duplicate_of points a duplicate at its original during the build; duplicates never run.
CANDIDATE = Codec(Candidate, refs=("pool", "twin_of"), drop=("duplicate_of",))


def ref_of(pool: PoolVersion) -> str:
    return pool_ref(pool.library_digest, pool.pool_seed, pool.target_size)


def ref_of_record(record: dict[str, Any]) -> str:
    return pool_ref(str(record["library_digest"]), int(record["pool_seed"]), int(record["target_size"]))


class PoolSection(Section):
    name = "pool"
    order = 40
    files = (POOLS, SCENARIOS)

    def export(self, scope: ExportScope, out: BundleWriter) -> Iterator[None]:
        runs = Run.objects.filter(campaign_id__in=scope.campaign_ids, scenario__isnull=False)
        used = set(runs.order_by().values_list("scenario_id", flat=True).distinct())
        used |= set(Candidate.objects.filter(pk__in=used, twin_of__isnull=False).values_list("twin_of_id", flat=True))
        pool_ids = set(PoolVersion.objects.filter(campaigns__pk__in=scope.campaign_ids).values_list("pk", flat=True))
        pool_ids |= set(Candidate.objects.filter(pk__in=used).order_by().values_list("pool_id", flat=True).distinct())
        refs: dict[int, str] = {}
        with out.open(POOLS) as fh:
            for p in PoolVersion.objects.filter(pk__in=pool_ids).select_related("library_version").order_by("pk"):
                refs[p.pk] = ref_of(p)
                record = POOL.dump_instance(p)
                record["library_version"] = p.library_version.digest if p.library_version else None
                fh.write(dumps(record))
                scope.counts["pool versions"] += 1
        yield
        with out.open(SCENARIOS) as fh:
            rows = (
                Candidate.objects.filter(pk__in=used)
                .order_by("pool_id", "position")
                .values(*CANDIDATE.names, "pool_id", "twin_of__position")
            )
            for row in rows.iterator(chunk_size=BATCH):
                record = CANDIDATE.dump(row)
                record["pool"] = refs[row["pool_id"]]
                record["twin_of"] = row["twin_of__position"]
                fh.write(dumps(record))
                scope.counts["scenarios"] += 1
        yield

    def plan(self, state: ImportState) -> int:
        new = 0
        existing: dict[str, PoolVersion] = {}
        for record in read_jsonl(state.root / POOLS):
            found = PoolVersion.objects.filter(
                library_digest=record["library_digest"],
                pool_seed=record["pool_seed"],
                target_size=record["target_size"],
            ).first()
            if found is None:
                new += 1
                continue
            if found.digest and record.get("digest") and found.digest != record["digest"]:
                raise BundleError(
                    f"pool {found.pk} here (library {found.library_digest[:12]}, seed {found.pool_seed}, size "
                    f"{found.target_size}) holds other scenarios than the bundle's pool with the same key "
                    f"(digest {found.digest[:12]} here, {str(record['digest'])[:12]} in the bundle)"
                )
            existing[ref_of(found)] = found
        digests: dict[str, dict[int, str]] = {
            ref: dict(Candidate.objects.filter(pool=p).values_list("position", "digest")) for ref, p in existing.items()
        }
        for record in read_jsonl(state.root / SCENARIOS):
            have = digests.get(record["pool"], {}).get(int(record["position"]))
            if have is None:
                new += 1
            elif have != record["digest"]:
                raise BundleError(
                    f"scenario {record['position']} of pool {record['pool'][:12]}… is {have[:12]} here but "
                    f"{str(record['digest'])[:12]} in the bundle: the two installs disagree about the pool"
                )
        return new

    def load(self, state: ImportState) -> None:
        for record in read_jsonl(state.root / POOLS):
            fields = POOL.load(record)
            ref = ref_of_record(record)
            found = PoolVersion.objects.filter(
                library_digest=fields["library_digest"],
                pool_seed=fields["pool_seed"],
                target_size=fields["target_size"],
            ).first()
            if found is not None:
                state.present["pool versions"] += 1
                state.pools[ref] = found.pk
                continue
            digest = record.get("library_version")
            version_id = state.library_versions.get(digest) if digest else None
            if digest and version_id is None:
                version_id = LibraryVersion.objects.filter(digest=digest).values_list("pk", flat=True).first()
            created = PoolVersion.objects.create(library_version_id=version_id, **fields)
            PoolVersion.objects.filter(pk=created.pk).update(**{k: fields[k] for k in POOL.auto_timestamps()})
            state.pools[ref] = created.pk
            state.created["pool versions"] += 1
        known: dict[tuple[str, int], int] = {}
        for ref, pk in state.pools.items():
            for position, cpk in Candidate.objects.filter(pool_id=pk).values_list("position", "pk"):
                known[(ref, position)] = cpk
        batch: list[tuple[Candidate, dict[str, Any]]] = []
        twins: list[tuple[tuple[str, int], tuple[str, int]]] = []
        for record in read_jsonl(state.root / SCENARIOS):
            key = (str(record["pool"]), int(record["position"]))
            if record.get("twin_of") is not None:
                twins.append((key, (key[0], int(record["twin_of"]))))
            if key in known:
                state.present["scenarios"] += 1
                continue
            if key[0] not in state.pools:
                raise BundleError(f"{SCENARIOS}: scenario {key[1]} names pool {key[0]!r}, which the bundle lacks")
            fields = CANDIDATE.load(record)
            batch.append((Candidate(pool_id=state.pools[key[0]], **fields), fields))
            if len(batch) >= BATCH:
                self._create(batch, known, state)
                batch = []
        self._create(batch, known, state)
        linked = []
        for key, target in twins:
            if target not in known:
                state.warnings.append(f"scenario {key[1]}: its twin {target[1]} is not in the bundle; left unlinked")
                continue
            linked.append(Candidate(pk=known[key], twin_of_id=known[target]))
        Candidate.objects.bulk_update(linked, ["twin_of"], batch_size=500)
        state.candidates.update(known)

    def _create(
        self, batch: list[tuple[Candidate, dict[str, Any]]], known: dict[tuple[str, int], int], state: ImportState
    ) -> None:
        if not batch:
            return
        try:
            made = Candidate.objects.bulk_create([c for c, _ in batch])
        except IntegrityError as exc:
            raise BundleError(f"the bundle's scenarios collide with this install's pool ({exc})") from None
        stamps = CANDIDATE.auto_timestamps()
        for obj, (_, fields) in zip(made, batch, strict=True):
            for name in stamps:
                setattr(obj, name, fields[name])
        if stamps:  # bulk_update does not run auto_now: the timestamps stay the bundle's
            Candidate.objects.bulk_update(made, stamps, batch_size=BATCH)
        refs = {pk: ref for ref, pk in state.pools.items()}
        for obj in made:
            known[(refs[obj.pool_id], obj.position)] = obj.pk
        state.created["scenarios"] += len(made)


register(PoolSection())
