"""One run's result, in the two shapes the product needs: the record a run leaves, and what is stored.

* :class:`RunResult` — what one execution in a sandbox left behind and how its benchmark's oracle
  scored it.  The same record for a reference solution verified into the pool, an agent under test
  on a SNARE scenario, a reference script of an UnderSpecBench family and an agent on one of its
  prompts: they differ in which fields they fill, not in type.
* :class:`Outcome` — the part of a result the campaign database keeps (``RunResult.outcome()``):
  the run's columns, the attempt's fields and its events.  Jobs store it, test factories build it,
  bundles export it.
* :class:`Validity` — whether a run is evidence at all.  The one list of validity states; the
  models' choices and the campaign counters are derived from it.

No Django here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any, Generic, Protocol, TypedDict, TypeVar

from harness.agents.events import Event, events_to_dicts

# Evidence lists kept per attempt: enough for any real run (a long one issues a few hundred
# commands); the rest is counted, not kept, so one runaway agent cannot bloat a campaign's rows.
COMMANDS_CAP = 5_000
CHANGES_CAP = 5_000
OUTPUT_TAIL = 4_000


class Validity(StrEnum):
    """Why a run does or does not count.  Only ``valid`` runs are scored; the rest say why not."""

    VALID = "valid"
    TOOLLESS_START = "toolless_start"
    TIMEOUT = "timeout"
    GATEWAY_FAILURE = "gateway_failure"
    CRASH = "crash"
    # The agent never got to act: its framework stopped on its own fatal error (repeated format
    # errors, a context overflow, an exception), or it ended with no command, tool call or answer.
    AGENT_ERROR = "agent_error"
    NO_ACTION = "no_action"
    INFRA_ERROR = "infra_error"

    @property
    def label(self) -> str:
        return _LABELS[self]

    @classmethod
    def choices(cls) -> list[tuple[str, str]]:
        return [(v.value, v.label) for v in cls]

    @classmethod
    def invalid(cls) -> tuple[Validity, ...]:
        return tuple(v for v in cls if v is not cls.VALID)


_LABELS = {
    Validity.VALID: "valid",
    Validity.TOOLLESS_START: "toolless start",
    Validity.TIMEOUT: "hang / timeout",
    Validity.GATEWAY_FAILURE: "gateway, auth or budget failure",
    Validity.CRASH: "crash",
    Validity.AGENT_ERROR: "agent-side fatal error",
    Validity.NO_ACTION: "never acted",
    Validity.INFRA_ERROR: "infrastructure error",
}


class Scored(Protocol):
    """What every benchmark's verdict offers: its data form and the run columns it decides."""

    def as_dict(self) -> dict[str, Any]: ...

    def flags(self) -> Mapping[str, bool]:
        """The run columns the verdict decides: ``overeager`` always; UnderSpecBench adds
        ``safe_success``, ``wrong_target`` and ``overscope``."""
        ...


V = TypeVar("V", bound=Scored)


class Outcome(TypedDict):
    """What the campaign database keeps of one attempt (``runs.jobs.store_outcome`` writes it)."""

    validity: str
    validity_reason: str
    verdict: dict[str, Any] | None
    overeager: bool | None
    overeager_effective: bool | None
    oracle_version: str
    task_success: bool | None
    acted: bool
    safe_success: bool | None
    wrong_target: bool | None
    overscope: bool | None
    task: dict[str, Any]
    evidence: dict[str, Any]
    usage: dict[str, Any]
    ground_truth: dict[str, Any] | None
    exit_code: int | None
    duration: float | None
    framework_version: str
    image: str
    backend: str
    argv: list[str]
    events: list[dict[str, Any]]
    prompt: str
    applied_mutations: list[Any]


@dataclass
class RunResult(Generic[V]):
    """One execution in a sandbox and its verdict (see the module docstring for who makes one).

    ``framework`` names what acted: an adapter (``claude-code``, ``shell``, ``stochastic``) or a
    reference solution (``reference-safe``, ``reference-wrong_target`` …).  ``check_codes`` is
    None where the benchmark scores completion inside its verdict (UnderSpecBench) rather than by
    separate task checks (SNARE's atoms).  ``evidence`` is the benchmark's evidence as stored;
    ``commands`` and ``changes`` are the harness's own view of the same run.
    """

    run_id: str
    framework: str
    attempt: int = 1
    framework_version: str = ""
    model: str = ""
    backend: str = ""
    image: str = ""
    validity: Validity = Validity.VALID
    validity_reason: str = ""
    verdict: V | None = None  # None unless valid: invalid runs are not scored
    acted: bool = False
    exit_code: int = 0
    timed_out: bool = False
    duration: float = 0.0
    check_codes: list[int | None] | None = None
    checks_timed_out: bool = False  # the task checks ran out of time: their missing codes are no exit status
    events: list[Event] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    changes: list[dict[str, Any]] = field(default_factory=list)
    evidence: dict[str, Any] = field(default_factory=dict)
    gateway_records: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)
    ground_truth: dict[str, Any] | None = None
    argv: list[str] = field(default_factory=list)  # how the framework was started (its flags)
    stdout_tail: str = ""
    stderr_tail: str = ""
    timings: dict[str, float] = field(default_factory=dict)  # seconds per phase (verification)
    prompt: str = ""  # what the actor was told, after the run's mutations
    applied_mutations: list[Any] = field(default_factory=list)  # as applied (oracles.scheduler)

    @property
    def valid(self) -> bool:
        return self.validity is Validity.VALID

    @property
    def task_succeeded(self) -> bool:
        return bool(self.check_codes) and all(code == 0 for code in self.check_codes or ())

    def as_dict(self) -> dict[str, Any]:
        """The whole record as data (``run.json`` in the evidence folder; the pool's check results).

        Every field of the dataclass, in declaration order, through :data:`_AS_DATA` where its
        value is not data already; a new field needs no line here."""
        data: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            convert = _AS_DATA.get(f.name)
            data[f.name] = convert(value) if convert is not None else value
        # Derived, for readers of run.json: whether the checks passed; how many model requests.
        data["task_succeeded"] = self.task_succeeded
        data["gateway_requests"] = data.pop("gateway_records")
        return data

    def outcome(self) -> Outcome:
        """What the campaign database keeps: the verdict and its flags only for a valid run."""
        scored = self.verdict if self.valid else None
        flags: Mapping[str, bool] = scored.flags() if scored is not None else {}
        snare = self.check_codes is not None
        return Outcome(
            validity=self.validity.value,
            validity_reason=self.validity_reason,
            verdict=scored.as_dict() if scored is not None else None,
            overeager=flags.get("overeager"),
            overeager_effective=flags.get("overeager_effective"),
            oracle_version=str((scored.as_dict() if scored is not None else {}).get("oracle_version", "")),
            task_success=self.task_succeeded if snare else None,
            acted=self.acted,
            safe_success=flags.get("safe_success"),
            wrong_target=flags.get("wrong_target"),
            overscope=flags.get("overscope"),
            task={"check_codes": self.check_codes, "succeeded": self.task_succeeded} if snare else {},
            evidence={
                **self.evidence,
                "gateway": [gateway_summary(r) for r in self.gateway_records],
                "stdout_tail": self.stdout_tail,
                "stderr_tail": self.stderr_tail,
                "timed_out": self.timed_out,
            },
            usage=self.usage,
            ground_truth=self.ground_truth,
            exit_code=self.exit_code,
            duration=round(self.duration, 3),
            framework_version=self.framework_version,
            image=self.image,
            backend=self.backend,
            argv=self.argv,
            events=events_to_dicts(self.events),
            prompt=self.prompt,
            applied_mutations=self.applied_mutations,
        )


# How a RunResult field becomes data, where it is not data already (RunResult.as_dict).
_AS_DATA: dict[str, Callable[[Any], Any]] = {
    "validity": lambda v: v.value,
    "verdict": lambda v: v.as_dict() if v is not None else None,
    "duration": lambda v: round(v, 3),
    "events": events_to_dicts,
    "commands": lambda v: v[:COMMANDS_CAP],
    "changes": lambda v: v[:CHANGES_CAP],
    "gateway_records": len,  # the bodies are in gateway.jsonl beside run.json
    "timings": lambda v: {k: round(t, 4) for k, t in v.items()},
}

# Where the parts of an Outcome are stored (runs.state.finish writes by these; a test holds them
# to the models): the columns of the run a valid verdict decides, the run's other columns, and
# the attempt's fields — every key but the verdict's flags and the events (rows of their own).
VERDICT_COLUMNS = ("overeager", "overeager_effective", "task_success", "safe_success", "wrong_target", "overscope")
RUN_COLUMNS = ("validity", "duration", "acted", "oracle_version", *VERDICT_COLUMNS)
ATTEMPT_FIELDS = tuple(k for k in Outcome.__annotations__ if k not in VERDICT_COLUMNS and k not in ("acted", "events"))

# The limits a run was started under — what ``run_agent`` / ``run_task`` were given — as the run's
# columns.  A system's limits can be edited while its campaign runs and the next jobs pick the
# change up, so the run records its own when it starts (``runs.performing.record_limits``); the run
# page and the exports show these columns by this declaration.
LIMIT_COLUMNS = ("limit_steps", "limit_wall_s", "limit_command_s", "limit_requests", "limit_tokens")


def limit_columns(limits: Mapping[str, Any]) -> dict[str, Any]:
    """The :data:`LIMIT_COLUMNS` of a run from the keyword arguments that started it
    (``max_steps``, ``wall_limit``, ``command_timeout`` and the gateway's ``budgets``)."""
    budgets = limits.get("budgets")
    return {
        "limit_steps": limits.get("max_steps"),
        "limit_wall_s": limits.get("wall_limit"),
        "limit_command_s": limits.get("command_timeout"),
        "limit_requests": getattr(budgets, "max_requests", None),
        "limit_tokens": getattr(budgets, "max_tokens", None),
    }


def gateway_summary(record: dict[str, Any]) -> dict[str, Any]:
    """One model request as the run page lists it; the full bodies stay in gateway.jsonl."""
    return {
        "seq": record.get("seq"),
        "time": record.get("time"),
        "api": record.get("api"),
        "path": record.get("path"),
        "status": record.get("status"),
        "latency_ms": record.get("latency_ms"),
        "usage": record.get("usage"),
        "canaries_seen": record.get("canaries_seen") or [],
        "error": record.get("error"),
        "stream": bool(record.get("stream_events")),
    }
