"""Run tokens: what a sandbox presents to the gateway instead of a real API key.

The worker calls :func:`register_run` before it starts a sandbox and hands the sandbox only the
random token and the gateway's address.  The grant (which upstream, which budgets, which canaries,
where to write evidence) lives in Redis under a key derived from the token's SHA-256, so a Redis
dump does not reveal live tokens, and expires with the run.  Counters live next to it and outlive
:func:`revoke_run` until the TTL, so the worker can read the final usage after the sandbox is gone.

Sync functions are for the worker (``redis.Redis``); the ``a``-prefixed ones are the gateway's
(``redis.asyncio.Redis``).  Both share the key layout defined here.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import redis
import redis.asyncio as aioredis

from harness.gateway.protocols import ApiKind, gemini_model_problem

DEFAULT_PREFIX = "overeager:gateway:"
TOKEN_PREFIX = "oe-run-"  # noqa: S105 - a label, not a secret
# Counters are kept this long after the grant expires, for the worker's final read.
STATE_GRACE_S = 3600

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# A model id sent in a request body: printable, no whitespace (``ft:gpt-4o:org::id``,
# ``Qwen/Qwen2.5-Coder``).  Gemini puts it in the URL path and is stricter (gemini_model_problem).
_MODEL_ID = re.compile(r"[\x21-\x7e]{1,200}")

UpstreamKind = Literal["http", "scripted"]


class GrantError(ValueError):
    """A grant that cannot be registered (bad upstream config, expiry in the past, …).

    ``field`` names the ``UpstreamConfig`` field at fault, when there is one (for forms).
    """

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class UpstreamConfig:
    kind: UpstreamKind
    model: str = ""  # replaces the request's "model" when set
    base_url: str = ""  # http: e.g. https://api.anthropic.com/v1 — the API suffix is appended
    key_env: str = ""  # http: NAME of the environment variable holding the real key (never the key)
    script: list[dict[str, Any]] | None = None  # scripted: the turns

    def validate(self, api: ApiKind | None = None) -> None:
        """Raise ``GrantError`` naming what is wrong; ``api``, when known, adds its own rules."""
        if self.kind == "http":
            if not self.base_url.startswith(("http://", "https://")):
                raise GrantError(f"http upstream needs an http(s) base_url, got {self.base_url!r}", "base_url")
            if self.key_env and not _ENV_NAME.match(self.key_env):
                raise GrantError(f"key_env must be an environment variable name, got {self.key_env!r}", "key_env")
            # The model is pinned: with none configured the agent's choice would go upstream, in
            # the body (any model the operator's key can call) or, for Gemini, in the URL's path.
            if not self.model:
                raise GrantError(
                    "http upstream needs a model: the model id the gateway sends to the provider "
                    "(an agent's own choice is never forwarded)",
                    "model",
                )
            if not _MODEL_ID.fullmatch(self.model):
                raise GrantError(
                    f"model {self.model[:80]!r} has whitespace or control characters, or is too long", "model"
                )
            if api is ApiKind.GEMINI and gemini_model_problem(self.model):
                raise GrantError(gemini_model_problem(self.model), "model")
        elif self.kind == "scripted":
            # Imported here so that registering a run does not import aiohttp.
            from harness.gateway.scripted import ScriptError, parse_script

            try:
                parse_script(self.script)
            except ScriptError as exc:
                raise GrantError(f"scripted upstream: {exc}") from None
        else:
            raise GrantError(f"unknown upstream kind {self.kind!r}")


@dataclass(frozen=True)
class Budgets:
    max_requests: int | None = None
    max_tokens: int | None = None  # input + output, as reported by the upstream (or estimated)
    max_seconds: float | None = None  # wall time since the run's first request


@dataclass(frozen=True)
class RunGrant:
    run_id: str
    attempt: int
    api_kind: ApiKind
    upstream: UpstreamConfig
    evidence_path: str
    expires_at: float  # epoch seconds
    budgets: Budgets = field(default_factory=Budgets)
    canaries: tuple[str, ...] = ()

    def to_json(self) -> str:
        data = asdict(self)
        data["api_kind"] = self.api_kind.value
        data["canaries"] = list(self.canaries)
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_json(cls, text: str | bytes) -> RunGrant:
        data = json.loads(text)
        return cls(
            run_id=str(data["run_id"]),
            attempt=int(data["attempt"]),
            api_kind=ApiKind(data["api_kind"]),
            upstream=UpstreamConfig(**data["upstream"]),
            evidence_path=str(data["evidence_path"]),
            expires_at=float(data["expires_at"]),
            budgets=Budgets(**data.get("budgets") or {}),
            canaries=tuple(data.get("canaries") or ()),
        )


@dataclass(frozen=True)
class RunUsage:
    """Counters of one run as the gateway left them."""

    seq: int = 0  # every authenticated request, rejected ones included
    requests: int = 0  # requests forwarded to the upstream
    input_tokens: int = 0  # every prompt token, the cached ones included
    output_tokens: int = 0
    cached_input_tokens: int = 0  # the prompt tokens served from the provider's cache (cheaper)
    cache_write_tokens: int = 0  # the prompt tokens written to it (Anthropic bills them dearer)
    first_request_at: float | None = None
    budget_exceeded: str | None = None  # the first budget reason recorded, if any
    canaries_seen: tuple[str, ...] = ()

    @classmethod
    def from_redis(cls, raw: dict[bytes, bytes], canaries: set[bytes]) -> RunUsage:
        def get(name: str) -> str | None:
            value = raw.get(name.encode())
            return value.decode() if value is not None else None

        first = get("first_request_at")
        return cls(
            seq=int(get("seq") or 0),
            requests=int(get("requests") or 0),
            input_tokens=int(get("input_tokens") or 0),
            output_tokens=int(get("output_tokens") or 0),
            cached_input_tokens=int(get("cached_input_tokens") or 0),
            cache_write_tokens=int(get("cache_write_tokens") or 0),
            first_request_at=float(first) if first else None,
            budget_exceeded=get("budget_exceeded"),
            canaries_seen=tuple(sorted(c.decode() for c in canaries)),
        )


def new_run_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(24)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def grant_key(token: str, prefix: str = DEFAULT_PREFIX) -> str:
    return f"{prefix}grant:{_digest(token)}"


def state_key(token: str, prefix: str = DEFAULT_PREFIX) -> str:
    return f"{prefix}state:{_digest(token)}"


def canary_key(token: str, prefix: str = DEFAULT_PREFIX) -> str:
    return f"{prefix}canaries:{_digest(token)}"


def register_run(r: redis.Redis, token: str, grant: RunGrant, prefix: str = DEFAULT_PREFIX) -> None:
    grant.upstream.validate(grant.api_kind)
    ttl = int(grant.expires_at - time.time())
    if ttl <= 0:
        raise GrantError("expires_at is in the past")
    pipe = r.pipeline()
    pipe.set(grant_key(token, prefix), grant.to_json(), ex=ttl)
    pipe.delete(state_key(token, prefix), canary_key(token, prefix))
    pipe.execute()


def revoke_run(r: redis.Redis, token: str, prefix: str = DEFAULT_PREFIX) -> None:
    r.delete(grant_key(token, prefix))


def run_usage(r: redis.Redis, token: str, prefix: str = DEFAULT_PREFIX) -> RunUsage:
    raw: dict[bytes, bytes] = r.hgetall(state_key(token, prefix))  # type: ignore[assignment]
    canaries: set[bytes] = r.smembers(canary_key(token, prefix))  # type: ignore[assignment]
    return RunUsage.from_redis(raw, canaries)


# --------------------------------------------------------------------------------------------
# The gateway's side (asyncio)


async def alookup(r: aioredis.Redis, token: str, prefix: str = DEFAULT_PREFIX) -> RunGrant | None:
    """The grant for ``token``, or None if unknown, revoked or expired."""
    raw = await r.get(grant_key(token, prefix))
    if raw is None:
        return None
    grant = RunGrant.from_json(raw)
    # Redis TTLs are whole seconds; expires_at is the authority.
    return grant if grant.expires_at > time.time() else None


class RunCounters:
    """Atomic per-run counters in one Redis hash (safe across gateway processes)."""

    def __init__(self, r: aioredis.Redis, token: str, grant: RunGrant, prefix: str = DEFAULT_PREFIX) -> None:
        self.r = r
        self.key = state_key(token, prefix)
        self.canary_key = canary_key(token, prefix)
        self.ttl = max(1, int(grant.expires_at - time.time())) + STATE_GRACE_S

    async def next_seq(self, now: float) -> tuple[int, float]:
        """Number this request and return it with the run's first-request time."""
        pipe = self.r.pipeline()
        pipe.hincrby(self.key, "seq", 1)
        pipe.hsetnx(self.key, "first_request_at", repr(now))
        pipe.hget(self.key, "first_request_at")
        pipe.expire(self.key, self.ttl)
        seq, _, first, _ = await pipe.execute()
        return int(seq), float(first)

    async def tokens_used(self) -> int:
        inp, out = await self.r.hmget(self.key, ["input_tokens", "output_tokens"])
        return int(inp or 0) + int(out or 0)

    async def claim_request(self, max_requests: int | None) -> int | None:
        """Count one forwarded request; None (and nothing counted) if the budget is spent.

        HINCRBY then roll back on overflow: of N racing claims exactly the first max_requests
        see a value within the budget, since each increment is atomic.
        """
        n = int(await self.r.hincrby(self.key, "requests", 1))
        if max_requests is not None and n > max_requests:
            await self.r.hincrby(self.key, "requests", -1)
            return None
        return n

    async def add_usage(
        self, input_tokens: int, output_tokens: int, cached_input_tokens: int = 0, cache_write_tokens: int = 0
    ) -> None:
        pipe = self.r.pipeline()
        pipe.hincrby(self.key, "input_tokens", input_tokens)
        pipe.hincrby(self.key, "output_tokens", output_tokens)
        if cached_input_tokens:
            pipe.hincrby(self.key, "cached_input_tokens", cached_input_tokens)
        if cache_write_tokens:
            pipe.hincrby(self.key, "cache_write_tokens", cache_write_tokens)
        await pipe.execute()

    async def mark_budget_exceeded(self, reason: str) -> None:
        await self.r.hsetnx(self.key, "budget_exceeded", reason)

    async def mark_canaries(self, seen: list[str]) -> None:
        if seen:
            pipe = self.r.pipeline()
            pipe.sadd(self.canary_key, *seen)
            pipe.expire(self.canary_key, self.ttl)
            await pipe.execute()
