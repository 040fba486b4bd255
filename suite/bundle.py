"""The UnderSpecBench suite the campaigns ran: its version records and, when available, its families.

The same contract as the SNARE library (``library.py``): the database keeps only each suite
state's digest (``SuiteVersion``), so the families travel as their canonical YAML
(``suite.loading.export_suite``) only while the current suite is the state a campaign recorded.
The 32 prompts of a family are derived from it (``TaskFamily.sync_prompts``), so loading the
families recreates exactly the prompts runs refer to (by family slug and S/B/R, checked by digest).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.apps import apps

from harness.bundle.archive import BundleWriter
from harness.bundle.format import BundleError
from runs.bundle.records import Codec
from runs.bundle.sections.base import ExportScope, ImportState, Section, dumps, read_json, read_jsonl, register
from runs.models import Campaign

FOLDER = "suite"
STATE = f"{FOLDER}/state.json"
VERSIONS = f"{FOLDER}/versions.jsonl"
FAMILIES = f"{FOLDER}/families"


def _version_codec() -> Codec:
    from suite.models import SuiteVersion

    return Codec(SuiteVersion)


class SuiteSection(Section):
    name = "suite"
    order = 50
    files = (STATE, VERSIONS, f"{FAMILIES}/<slug>.yaml")

    def available(self) -> bool:
        return apps.is_installed("suite")

    def export(self, scope: ExportScope, out: BundleWriter) -> Iterator[None]:
        from suite.loading import export_suite
        from suite.models import SuiteVersion, TaskFamily

        codec = _version_codec()
        wanted = set(Campaign.objects.filter(pk__in=scope.campaign_ids).values_list("suite_digest", flat=True))
        wanted.discard("")
        with out.open(VERSIONS) as fh:
            for v in SuiteVersion.objects.filter(digest__in=wanted).order_by("digest").values(*codec.names):
                fh.write(dumps(codec.dump(v)))
                scope.counts["suite versions"] += 1
        state: dict[str, Any] = {"digest": "", "campaign_digests": sorted(wanted), "families": []}
        current = SuiteVersion.current_digest() if wanted else ""
        if wanted and current in wanted:
            with tempfile.TemporaryDirectory(prefix="overeager-suite-") as tmp:
                for path in sorted(export_suite(Path(tmp))):
                    out.add_file(f"{FAMILIES}/{path.relative_to(tmp).as_posix()}", path)
                    scope.counts["suite files"] += 1
                    yield
            state["digest"] = current
            state["families"] = [
                f"{s}:{d}" for s, d in TaskFamily.objects.order_by("slug").values_list("slug", "digest")
            ]
        elif wanted:
            scope.warnings.append(
                f"the UnderSpecBench suite changed since these campaigns ran (now {current[:12]}): the bundle "
                "records the suite digests only, not the families"
            )
        out.write_bytes(STATE, dumps(state))
        yield

    def plan(self, state: ImportState) -> int:
        from suite.models import SuiteVersion, TaskFamily

        doc = read_json(state.root / STATE, {}) or {}
        digest = str(doc.get("digest") or "")
        load = False
        new = 0
        # Only a bundle that ran UnderSpecBench prompts touches the suite's tables at all.
        if digest and SuiteVersion.current_digest() != digest:
            if not TaskFamily.objects.exists():
                load, new = True, len(doc.get("families") or [])
            else:
                state.warnings.append(
                    f"this install's UnderSpecBench suite ({SuiteVersion.current_digest()[:12]}) is not the "
                    f"bundle's ({digest[:12]}); it was left as it is"
                )
        state.decisions["suite.load"] = load
        state.decisions["suite.digest"] = digest
        digests = {r.get("digest") for r in read_jsonl(state.root / VERSIONS)}
        known = set(SuiteVersion.objects.filter(digest__in=digests).values_list("digest", flat=True))
        return new + len(digests - known)

    def load(self, state: ImportState) -> None:
        from suite.loading import load_suite
        from suite.models import SuiteVersion

        codec = _version_codec()
        records = list(read_jsonl(state.root / VERSIONS))
        if not records and not state.decisions.get("suite.load"):
            return
        before = set(SuiteVersion.objects.values_list("digest", flat=True))
        if state.decisions.get("suite.load"):
            report = load_suite(state.root / FAMILIES, source="import_bundle")
            if report.digest != state.decisions["suite.digest"]:
                raise BundleError(
                    f"the bundle's suite files load to digest {report.digest}, not the recorded "
                    f"{state.decisions['suite.digest']}: suite/ is inconsistent"
                )
            state.created["task families"] += len(report.created)
        for record in records:
            fields = codec.load(record)
            obj = SuiteVersion.objects.filter(digest=fields["digest"]).first()
            if obj is not None and obj.digest in before:
                state.present["suite versions"] += 1
                continue
            if obj is None:
                obj = SuiteVersion.objects.create(**fields)
            SuiteVersion.objects.filter(pk=obj.pk).update(**fields)
            state.created["suite versions"] += 1


register(SuiteSection())
