"""Campaign records: parameters and seed, planted truth, allocator state, snapshots, counters.

A campaign's uuid is its identity across installs.  Importing a campaign that is already here
is a no-op when the stored record is identical (the second import of a bundle), and refused when
it differs (the bundle holds another state of that campaign — e.g. exported before it finished);
a *different* campaign with the same name is refused too, since names are unique.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from harness.bundle.archive import BundleWriter
from harness.bundle.format import BundleError
from runs.bundle.records import Codec
from runs.bundle.sections.base import ExportScope, ImportState, Section, dumps, read_jsonl, register
from runs.bundle.sections.pool import ref_of
from runs.bundle.sections.systems import redact
from runs.models import Campaign

CAMPAIGNS = "campaigns.jsonl"
# created_by: the account that started it is who clicked, not a result (and not the other install's user);
# queue: where this install's workers found its jobs, nothing the other install can use.
CAMPAIGN = Codec(Campaign, refs=("sut", "matrix", "pool"), drop=("created_by", "queue", "queue_since"))


def campaign_record(c: Campaign) -> dict[str, Any]:
    record = CAMPAIGN.dump_instance(c)
    record["sut_snapshot"] = redact(record["sut_snapshot"])
    record["sut"] = str(c.sut.uuid)
    record["matrix"] = str(c.matrix.uuid) if c.matrix_id and c.matrix else None
    record["pool"] = ref_of(c.pool) if c.pool_id and c.pool else None
    return record


def _comparable(record: dict[str, Any]) -> dict[str, Any]:
    # The SUT is matched by slug on import, so its uuid may differ here; its configuration is in
    # sut_snapshot, which is compared.
    return {k: v for k, v in record.items() if k != "sut"}


class CampaignsSection(Section):
    name = "campaigns"
    order = 60
    files = (CAMPAIGNS,)

    def export(self, scope: ExportScope, out: BundleWriter) -> Iterator[None]:
        by_pk = Campaign.objects.select_related("sut", "matrix", "pool").in_bulk(scope.campaign_ids)
        with out.open(CAMPAIGNS) as fh:
            for pk in scope.campaign_ids:
                fh.write(dumps(campaign_record(by_pk[pk])))
                scope.counts["campaigns"] += 1
        yield

    def plan(self, state: ImportState) -> int:
        new = 0
        for record in read_jsonl(state.root / CAMPAIGNS):
            found = Campaign.objects.select_related("sut", "matrix", "pool").filter(uuid=record["uuid"]).first()
            if found is None:
                other = Campaign.objects.filter(name=record["name"]).first()
                if other is not None:
                    raise BundleError(
                        f"a different campaign named {record['name']!r} exists here (uuid {other.uuid}); "
                        "rename it, or import into another install"
                    )
                new += 1
                continue
            mine = _comparable(campaign_record(found))
            theirs = _comparable(record)
            differs = sorted(k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k))
            if differs:
                raise BundleError(
                    f"campaign {found.name!r} ({found.uuid}) is already here and differs from the bundle's in "
                    f"{', '.join(differs)}: the bundle holds another state of it. Delete it here first, or import "
                    "into another install."
                )
            state.skipped_campaigns.add(str(record["uuid"]))
        return new

    def load(self, state: ImportState) -> None:
        for record in read_jsonl(state.root / CAMPAIGNS):
            uuid = str(record["uuid"])
            if uuid in state.skipped_campaigns:
                state.present["campaigns"] += 1
                continue
            fields = CAMPAIGN.load(record)
            try:
                sut_id = state.suts[record["sut"]]
            except KeyError:
                raise BundleError(
                    f"campaign {record['name']!r} names SUT {record['sut']}, which suts.jsonl lacks"
                ) from None
            pool_id = state.pools.get(record["pool"]) if record.get("pool") else None
            if record.get("pool") and pool_id is None:
                raise BundleError(f"campaign {record['name']!r} names a pool the bundle lacks ({record['pool']})")
            if record.get("matrix") and record["matrix"] not in state.matrices:
                raise BundleError(
                    f"campaign {record['name']!r} names matrix {record['matrix']}, which the bundle lacks"
                )
            created = Campaign.objects.create(
                sut_id=sut_id,
                matrix_id=state.matrices[record["matrix"]] if record.get("matrix") else None,
                pool_id=pool_id,
                **fields,
            )
            Campaign.objects.filter(pk=created.pk).update(**{k: fields[k] for k in CAMPAIGN.auto_timestamps()})
            state.campaigns[uuid] = created.pk
            state.created["campaigns"] += 1


register(CampaignsSection())
