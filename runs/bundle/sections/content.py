"""The contract every curated body of content follows in a bundle (SNARE library, UnderSpecBench suite).

The database keeps no history of the entries of a library, only each state's digest (a
``ContentVersion``).  So a bundle carries the *entries* only while the current content is the state
a campaign recorded: the section then writes the canonical YAML export (the same files the loader
reads); when the content has changed since, it writes only the digests and the export warns.  An
import into an install that has none of this content loads the entries (and checks that they load
to the recorded digest); an install with other content keeps its own and warns.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

from harness.bundle.archive import BundleWriter
from harness.bundle.format import BundleError
from overeager.content import ContentVersion, LoadReport
from runs.bundle.records import Codec
from runs.bundle.sections.base import ExportScope, ImportState, Section, dumps, read_json, read_jsonl


class ContentSection(Section):
    """One body of content: ``<folder>/state.json``, ``<folder>/versions.jsonl`` and the entries' YAML."""

    folder: ClassVar[str]
    entries_folder: ClassVar[str]  # where the YAML export goes (the folder itself, or below it)
    label: ClassVar[str]  # "library", "UnderSpecBench suite": for messages
    entries_label: ClassVar[str]  # "library entries", "task families": for the import's counts
    state_key: ClassVar[str]  # the state.json list of entry digests: "entries", "families"

    def version_model(self) -> type[ContentVersion]:
        raise NotImplementedError

    def wanted(self, scope: ExportScope) -> set[str]:
        """The digests the exported campaigns recorded."""
        raise NotImplementedError

    def entry_digests(self) -> list[str]:
        raise NotImplementedError

    def is_empty(self) -> bool:
        raise NotImplementedError

    def exporter(self) -> Callable[[Path], list[Path]]:
        raise NotImplementedError

    def loader(self) -> Callable[..., LoadReport]:
        raise NotImplementedError

    def remember(self, state: ImportState, version: ContentVersion) -> None:
        """Record a loaded version where later sections look for it (nothing by default)."""

    # -- the contract ----------------------------------------------------------------------

    @property
    def state_path(self) -> str:
        return f"{self.folder}/state.json"

    @property
    def versions_path(self) -> str:
        return f"{self.folder}/versions.jsonl"

    def export(self, scope: ExportScope, out: BundleWriter) -> Iterator[None]:
        model = self.version_model()
        codec = Codec(model)
        wanted = self.wanted(scope)
        wanted.discard("")
        with out.open(self.versions_path) as fh:
            for v in model._default_manager.filter(digest__in=wanted).order_by("digest").values(*codec.names):
                fh.write(dumps(codec.dump(v)))
                scope.counts[f"{self.name} versions"] += 1
        state: dict[str, Any] = {"digest": "", "campaign_digests": sorted(wanted), self.state_key: []}
        current = model.current_digest() if wanted else ""
        if wanted and current in wanted:
            with tempfile.TemporaryDirectory(prefix=f"overeager-{self.name}-") as tmp:
                for path in sorted(self.exporter()(Path(tmp))):
                    out.add_file(f"{self.entries_folder}/{path.relative_to(tmp).as_posix()}", path)
                    scope.counts[f"{self.name} files"] += 1
                    yield
            state["digest"] = current
            state[self.state_key] = self.entry_digests()
        elif wanted:
            used = ", ".join(d[:12] for d in sorted(wanted))
            scope.warnings.append(
                f"the {self.label} changed since these campaigns ran (they used {used}, it is now {current[:12]}): "
                "the bundle records the digests only, not the entries"
            )
        out.write_bytes(self.state_path, dumps(state))
        yield

    def plan(self, state: ImportState) -> int:
        model = self.version_model()
        doc = read_json(state.root / self.state_path, {}) or {}
        digest = str(doc.get("digest") or "")
        load = False
        new = 0
        # Only a bundle whose campaigns used this content touches its tables at all.
        if digest and model.current_digest() != digest:
            if self.is_empty():
                load, new = True, len(doc.get(self.state_key) or [])
            else:
                state.warnings.append(
                    f"this install's {self.label} ({model.current_digest()[:12]}) is not the bundle's "
                    f"({digest[:12]}); it was left as it is"
                )
        state.decisions[f"{self.name}.load"] = load
        state.decisions[f"{self.name}.digest"] = digest
        digests = {r.get("digest") for r in read_jsonl(state.root / self.versions_path)}
        known = set(model._default_manager.filter(digest__in=digests).values_list("digest", flat=True))
        return new + len(digests - known)

    def load(self, state: ImportState) -> None:
        model = self.version_model()
        codec = Codec(model)
        records = list(read_jsonl(state.root / self.versions_path))
        loading = bool(state.decisions.get(f"{self.name}.load"))
        if not records and not loading:
            return
        before = set(model._default_manager.values_list("digest", flat=True))
        if loading:
            report = self.loader()(state.root / self.entries_folder, source="import_bundle")
            recorded = state.decisions[f"{self.name}.digest"]
            if report.digest != recorded:
                raise BundleError(
                    f"the bundle's {self.name} files load to digest {report.digest}, not the recorded "
                    f"{recorded}: {self.folder}/ is inconsistent"
                )
            state.created[self.entries_label] += len(report.created)
        for record in records:
            fields = codec.load(record)
            obj = model._default_manager.filter(digest=fields["digest"]).first()
            if obj is not None and obj.digest in before:
                state.present[f"{self.name} versions"] += 1
            else:
                if obj is None:
                    obj = model._default_manager.create(**fields)
                # Created just now (here or by the loader): take the bundle's record as it was.
                model._default_manager.filter(pk=obj.pk).update(**fields)
                state.created[f"{self.name} versions"] += 1
            self.remember(state, obj)
