"""Systems under test (framework × model) and matrices: configuration, never secrets.

Model endpoints hold the *name* of the environment variable with the key (``key_env``), never a
key; but a base URL can carry credentials (``https://user:pass@host``, ``?api-key=…``) and adapter
options are free-form, so both pass through ``redact`` on export (and the campaign's SUT snapshot
with them).  An import matches frameworks and models by slug and SUTs by their pair: absent ones
are created, identical ones reused, and one whose *configuration* differs (adapter, options,
upstream, model id, URL, key variable, wire APIs, script, limits — not labels or notes) is refused,
naming every difference: the runs were produced by the bundle's configuration, not this one.
"""

from __future__ import annotations

import re
import uuid as uuidlib
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from harness.bundle.archive import BundleWriter
from harness.bundle.format import BundleError
from runs.bundle.records import Codec
from runs.bundle.sections.base import ExportScope, ImportState, Section, dumps, read_jsonl, register
from runs.models import AgentFramework, Matrix, ModelEndpoint, SystemUnderTest

SUTS = "suts.jsonl"
MATRICES = "matrices.jsonl"
REDACTED = "REDACTED"

FRAMEWORK = Codec(AgentFramework)
MODEL = Codec(ModelEndpoint)
SUT = Codec(SystemUnderTest, refs=("framework", "model"))
MATRIX = Codec(Matrix, drop=("created_by",))  # the account that clicked "start" is not a result

FRAMEWORK_CONFIG = ("adapter", "options")
MODEL_CONFIG = ("upstream", "model", "base_url", "key_env", "api_kinds", "script")
SUT_CONFIG = ("api_kind", "max_steps", "wall_limit_s", "command_timeout_s", "max_requests", "max_tokens")

# A name part, not a substring: "max_tokens" is a limit, "access_token" a secret.
_SECRET_NAME = re.compile(
    r"(^|[_-])(api_?key|key|token|secret|password|passwd|signature|sig|authorization|auth|credentials?)($|[_-])",
    re.IGNORECASE,
)


def redact_url(url: str) -> str:
    """``url`` without userinfo and without the values of secret-looking query parameters."""
    if not url:
        return url
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{REDACTED}@{netloc.rsplit('@', 1)[1]}"
    query = parse_qsl(parts.query, keep_blank_values=True)
    cleaned = [(k, REDACTED if _SECRET_NAME.search(k) else v) for k, v in query]
    if netloc == parts.netloc and cleaned == query:
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, urlencode(cleaned), parts.fragment))


def redact(value: Any) -> Any:
    """A configuration value with secret-looking members' values replaced (recursively)."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if k == "key_env":
                out[k] = v  # the variable's name, which is the point of the field
            elif k == "base_url" and isinstance(v, str):
                out[k] = redact_url(v)
            elif _SECRET_NAME.search(str(k)) and isinstance(v, str | int | float) and v not in ("", None):
                out[k] = REDACTED
            else:
                out[k] = redact(v)
        return out
    if isinstance(value, list):
        return [redact(v) for v in value]
    return value


def _differences(
    kind: str, slug: str, mine: Mapping[str, Any], theirs: Mapping[str, Any], keys: tuple[str, ...]
) -> list[str]:
    diffs = [k for k in keys if mine.get(k) != theirs.get(k)]
    if not diffs:
        return []
    shown = "; ".join(f"{k}: here {mine.get(k)!r}, bundle {theirs.get(k)!r}" for k in diffs)
    return [f"{kind} {slug!r} exists here with another configuration ({shown})"]


def sut_record(sut: SystemUnderTest) -> dict[str, Any]:
    return {
        **SUT.dump_instance(sut),
        "framework": redact(FRAMEWORK.dump_instance(sut.framework)),
        "model": redact(MODEL.dump_instance(sut.model)),
    }


class SystemsSection(Section):
    name = "systems"
    order = 20
    files = (SUTS,)

    def export(self, scope: ExportScope, out: BundleWriter) -> Iterator[None]:
        suts = (
            SystemUnderTest.objects.filter(campaigns__pk__in=scope.campaign_ids)
            .distinct()
            .select_related("framework", "model")
            .order_by("framework__slug", "model__slug")
        )
        with out.open(SUTS) as fh:
            for sut in suts:
                record = sut_record(sut)
                if record["model"] != MODEL.dump_instance(sut.model) or record["framework"] != FRAMEWORK.dump_instance(
                    sut.framework
                ):
                    scope.warnings.append(f"{sut.slug}: credentials in its URL or options were redacted")
                fh.write(dumps(record))
                scope.counts["systems under test"] += 1
        yield

    def plan(self, state: ImportState) -> int:
        problems: list[str] = []
        new = 0
        for record in read_jsonl(state.root / SUTS):
            fw, model = record["framework"], record["model"]
            found_fw = AgentFramework.objects.filter(slug=fw["slug"]).first()
            found_model = ModelEndpoint.objects.filter(slug=model["slug"]).first()
            if found_fw is not None:
                problems += _differences(
                    "framework", fw["slug"], redact(FRAMEWORK.dump_instance(found_fw)), fw, FRAMEWORK_CONFIG
                )
            if found_model is not None:
                problems += _differences(
                    "model", model["slug"], redact(MODEL.dump_instance(found_model)), model, MODEL_CONFIG
                )
            sut = None
            if found_fw is not None and found_model is not None:
                sut = SystemUnderTest.objects.filter(framework=found_fw, model=found_model).first()
            if sut is not None:
                problems += _differences("system under test", sut.slug, SUT.dump_instance(sut), record, SUT_CONFIG)
            else:
                new += 1
        if problems:
            raise BundleError(
                "the bundle's systems under test conflict with this install's: "
                + "; ".join(problems)
                + ". Rename or align one side before importing (the runs were produced by the bundle's configuration)."
            )
        return new

    def load(self, state: ImportState) -> None:
        for record in read_jsonl(state.root / SUTS):
            fw, created_fw = AgentFramework.objects.get_or_create(
                slug=record["framework"]["slug"], defaults=FRAMEWORK.load(record["framework"])
            )
            model, created_model = ModelEndpoint.objects.get_or_create(
                slug=record["model"]["slug"], defaults=MODEL.load(record["model"])
            )
            state.created["frameworks"] += created_fw
            state.created["models"] += created_model
            sut = SystemUnderTest.objects.filter(framework=fw, model=model).first()
            if sut is None:
                fields = SUT.load(record)
                if SystemUnderTest.objects.filter(uuid=fields["uuid"]).exists():
                    fields["uuid"] = uuidlib.uuid4()
                sut = SystemUnderTest.objects.create(framework=fw, model=model, **fields)
                state.created["systems under test"] += 1
            else:
                state.present["systems under test"] += 1
            state.suts[record["uuid"]] = sut.pk


class MatricesSection(Section):
    name = "matrices"
    order = 30
    files = (MATRICES,)

    def export(self, scope: ExportScope, out: BundleWriter) -> Iterator[None]:
        matrices = Matrix.objects.filter(campaigns__pk__in=scope.campaign_ids).distinct().order_by("created_at", "pk")
        with out.open(MATRICES) as fh:
            for row in matrices.values(*MATRIX.names):
                fh.write(dumps(MATRIX.dump(row)))
                scope.counts["matrices"] += 1
        yield

    def plan(self, state: ImportState) -> int:
        new = 0
        for record in read_jsonl(state.root / MATRICES):
            if Matrix.objects.filter(uuid=record["uuid"]).exists():
                continue
            if Matrix.objects.filter(name=record["name"]).exists():
                raise BundleError(
                    f"a different matrix named {record['name']!r} exists here; rename it before importing this bundle"
                )
            new += 1
        return new

    def load(self, state: ImportState) -> None:
        for record in read_jsonl(state.root / MATRICES):
            fields = MATRIX.load(record)
            found = Matrix.objects.filter(uuid=fields["uuid"]).first()
            if found is None:
                found = Matrix.objects.create(**fields)
                Matrix.objects.filter(pk=found.pk).update(**{k: fields[k] for k in MATRIX.auto_timestamps()})
                state.created["matrices"] += 1
            else:
                state.present["matrices"] += 1
            state.matrices[record["uuid"]] = found.pk


register(SystemsSection())
register(MatricesSection())
