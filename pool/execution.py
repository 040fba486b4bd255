"""Executing a scenario's reference solutions in a sandbox and collecting the oracle's evidence.

No Django here: the pool builder and (later) the campaign jobs call these functions with a
materialised scenario dict. One call = one sandbox:

1. the seed's git repository is built once per seed on the host (fixed authors and dates, so the
   commit ids are the same on every machine) and copied in with the overlay files;
2. a setup exec commits the tracked overlay files, adds the consent note commit if any, and
   creates the bare ``origin`` under /srv/remote;
3. manifest before → the solution script (fed on stdin, so the trace shows ``bash -s`` and not
   the script text) → manifest after → success checks (after the "after" manifest, so whatever
   the checks themselves write does not count as the agent's change);
4. the evidence (trace of the solution exec only, the diff, the contents of changed text files,
   stdout/stderr) goes to the composite oracle.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.agents.base import AgentAdapter, get_adapter
from harness.agents.events import Event
from harness.agents.identity import AGENT_IDENTITY, REFERENCE_CLOCK, SCRIPT_ARGV, SCRIPT_ENV
from harness.agents.runner import (
    DEFAULT_WALL_LIMIT,
    SETUP_TIMEOUT,
    GatewayHandle,
    plan_agent,
    read_records,
    take_turn,
    text_diffs,
)
from harness.gateway.registry import Budgets
from harness.outcome import CHANGES_CAP, COMMANDS_CAP, OUTPUT_TAIL, RunResult, Validity
from harness.sandbox.base import Limits, Sandbox, SandboxError, get_backend
from harness.sandbox.manifest import diff
from harness.sandbox.paths import FileSpec
from oracles import gitstate
from oracles.composite import ORACLE_VERSION, Spec, Verdict, judge
from oracles.globs import glob_to_regex
from oracles.predicates import Change, Evidence, Exec
from pool import reach
from pool.materialize import seed_tree

SOLUTION_TIMEOUT = 180.0
CHECK_TIMEOUT = 180.0
MAX_EVIDENCE_FILE = 256 * 1024
CHECK_MARK = "__OVEREAGER_CHECK__"
ORACLE_INPUT = "oracle_input.json"  # in an attempt's evidence folder
# Scenario packs (packs/) build their world with their own script instead of a seed: they run
# with this empty seed.
EMPTY_SEED: dict[str, Any] = {"id": "", "vars": {}, "ops": {}, "commits": []}
BUILD_DELIMITER = "__OVEREAGER_PACK_BUILD__"
BUILD_AUTHOR = ("Scenario Author", "author@example.org")
BUILD_DATE = "2026-01-05T09:00:00+00:00"
_seed_cache: dict[str, list[FileSpec]] = {}
_seed_lock = threading.Lock()


def _split_author(author: str) -> tuple[str, str]:
    name, _, email = author.partition(" <")
    return name, email.rstrip(">")


def build_seed_repo(seed: Mapping[str, Any], digest: str) -> list[FileSpec]:
    """The seed's working tree and ``.git`` as files under ``workspace/`` (cached per digest)."""
    if not seed.get("commits"):
        return []
    key = digest or seed["id"]
    with _seed_lock:
        cached = _seed_cache.get(key)
    if cached is not None:
        return cached
    with tempfile.TemporaryDirectory(prefix="overeager-seed-") as tmp:
        repo = Path(tmp) / "repo"
        repo.mkdir()
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": tmp,
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "LC_ALL": "C",
        }

        def git(*args: str, extra: Mapping[str, str] | None = None) -> None:
            subprocess.run(["git", *args], cwd=repo, env={**env, **(extra or {})}, check=True, capture_output=True)

        git("init", "-q", "-b", seed["vars"].get("default_branch", "main"))
        for commit in seed["commits"]:
            for f in commit["files"]:
                target = repo / f["path"]
                if f.get("delete"):
                    target.unlink(missing_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                if target.is_symlink() or target.exists():
                    target.unlink()
                if f.get("symlink"):
                    target.symlink_to(f["symlink"])
                else:
                    target.write_text(f.get("content", ""), encoding="utf-8")
                    target.chmod(int(f.get("mode", "0644"), 8))
            name, email = _split_author(commit["author"])
            dates = {"GIT_AUTHOR_DATE": commit["date"], "GIT_COMMITTER_DATE": commit["date"]}
            ident = {
                "GIT_AUTHOR_NAME": name,
                "GIT_AUTHOR_EMAIL": email,
                "GIT_COMMITTER_NAME": name,
                "GIT_COMMITTER_EMAIL": email,
            }
            git("add", "-A")
            git("commit", "-q", "--allow-empty", "-m", commit["message"], extra={**dates, **ident})
        # Hook samples are noise; one pack keeps the file count small. Refs stay loose files
        # (no gc/pack-refs): git needs a .git/refs directory, and only files are copied in.
        for sample in (repo / ".git" / "hooks").glob("*.sample"):
            sample.unlink()
        git("repack", "-a", "-d", "-q")
        git("prune")
        specs: list[FileSpec] = []
        for path in sorted(repo.rglob("*")):
            rel = path.relative_to(repo).as_posix()
            if path.is_symlink():
                specs.append(FileSpec(f"workspace/{rel}", symlink_target=os.readlink(path)))
            elif path.is_file():
                specs.append(FileSpec(f"workspace/{rel}", path.read_bytes(), path.stat().st_mode & 0o777))
    with _seed_lock:
        _seed_cache[key] = specs
    return specs


def scenario_files(scenario: Mapping[str, Any], seed_specs: Sequence[FileSpec]) -> list[FileSpec]:
    if scenario.get("builder") is not None:
        return list(seed_specs)  # a pack's files are written by its setup script, after build.sh
    overlay = {
        f["path"]: FileSpec(
            f["path"],
            f["content"].encode("utf-8"),
            int(f.get("mode", "0644"), 8),
            f["symlink"] or None if f.get("symlink") else None,
        )
        for f in scenario["files"]
    }
    merged = {s.path: s for s in seed_specs}
    merged.update(overlay)
    return [merged[p] for p in sorted(merged)]


def limit(scenario: Mapping[str, Any], name: str, default: float) -> float:
    """A scenario's own limit (pack scenarios declare them) or the pool's default."""
    value = (scenario.get("limits") or {}).get(name)
    return float(value) if value else default


def _write_file_lines(f: Mapping[str, Any]) -> list[str]:
    import base64

    target = "/" + _sandbox_rel(f["path"])
    data = base64.b64encode(f["content"].encode("utf-8")).decode()
    return [
        f"mkdir -p {shlex.quote(os.path.dirname(target))}",
        f"printf %s {data} | base64 -d > {shlex.quote(target)}",
        f"chmod {f.get('mode', '0644')} {shlex.quote(target)}",
    ]


def builder_setup_script(scenario: Mapping[str, Any]) -> str:
    """A pack scenario's setup: its build.sh in an empty /workspace, then the mutation files.

    build.sh runs under ``set -euo pipefail`` with fixed default git identities and dates (its
    own exports override them) and ``init.defaultBranch=main``, so a build is reproducible; the
    canary tokens are in ``CANARY_<NAME>``.  The files a mutation adds come after it, and only
    where the build left nothing (``built_paths`` keeps the allocator off those already).
    """
    name, email = BUILD_AUTHOR
    env = {
        "GIT_AUTHOR_NAME": name,
        "GIT_AUTHOR_EMAIL": email,
        "GIT_COMMITTER_NAME": name,
        "GIT_COMMITTER_EMAIL": email,
        "GIT_AUTHOR_DATE": BUILD_DATE,
        "GIT_COMMITTER_DATE": BUILD_DATE,
        "GIT_CONFIG_COUNT": "2",
        "GIT_CONFIG_KEY_0": "init.defaultBranch",
        "GIT_CONFIG_VALUE_0": "main",
        "GIT_CONFIG_KEY_1": "advice.detachedHead",
        "GIT_CONFIG_VALUE_1": "false",
        **dict(scenario.get("builder_env") or {}),
    }
    lines = ["set -eu", "cd /workspace"]
    lines += [f"export {k}={shlex.quote(str(v))}" for k, v in sorted(env.items())]
    lines += [
        f"bash -euo pipefail -s <<'{BUILD_DELIMITER}'",
        str(scenario["builder"]).rstrip("\n"),
        BUILD_DELIMITER,
        "cd /workspace",
    ]
    for f in scenario.get("files") or []:
        target = "/" + _sandbox_rel(f["path"])
        lines.append(f"if [ ! -e {shlex.quote(target)} ]; then")
        lines += ["  " + line for line in _write_file_lines(f)]
        lines.append("fi")
    return "\n".join(lines) + "\n"


def setup_script(scenario: Mapping[str, Any]) -> str:
    if scenario.get("builder") is not None:
        return builder_setup_script(scenario)
    lines = ["set -eu", "cd /workspace"]
    # The planted history (pool.materialize.planted_history): each commit by its own author and
    # date, starting from the seed's last commit's, so whatever runs after (setup_extra) commits and
    # tags deterministically even when nothing is planted. The hooks a scenario plants are for the
    # agent's commits, not these: --no-verify. --allow-empty only matters for a consent-stripped twin
    # whose one changed file was the comment carrier (the twin keeps its pair's history shape).
    gs = scenario["git_setup"]
    for commit in [{**gs["base"], "paths": [], "message": ""}, *gs["commits"]]:
        name, email = _split_author(commit["author"])
        lines += [
            f"export GIT_AUTHOR_NAME={shlex.quote(name)} GIT_AUTHOR_EMAIL={shlex.quote(email)}",
            f"export GIT_COMMITTER_NAME={shlex.quote(name)} GIT_COMMITTER_EMAIL={shlex.quote(email)}",
            f"export GIT_AUTHOR_DATE={shlex.quote(commit['date'])} GIT_COMMITTER_DATE={shlex.quote(commit['date'])}",
        ]
        if commit["paths"]:
            lines.append("git add -f -- " + " ".join(shlex.quote(p) for p in commit["paths"]))
        if commit["message"]:
            lines.append(f"git commit -q --no-verify --allow-empty -m {shlex.quote(commit['message'])}")
    # origin is a bare clone at the current HEAD; the remote-tracking ref and upstream config are
    # written directly (no fetch): same result as clone + fetch + --set-upstream-to, fewer processes.
    lines += [
        "git clone -q --bare --no-hardlinks /workspace /srv/remote/origin.git",
        "branch=$(git symbolic-ref --short HEAD)",
        "git update-ref refs/remotes/origin/$branch HEAD",
        "cat >> .git/config <<EOF",
        '[remote "origin"]',
        "\turl = /srv/remote/origin.git",
        "\tfetch = +refs/heads/*:refs/remotes/origin/*",
        '[branch "$branch"]',
        "\tremote = origin",
        "\tmerge = refs/heads/$branch",
        "EOF",
    ]
    # A scenario may finish its world itself (a diverged origin, modes, state the seed cannot
    # express): run last, as the harness, before anything is recorded.
    if scenario.get("setup_extra"):
        lines += ["cd /workspace", str(scenario["setup_extra"]).rstrip()]
    return "\n".join(lines) + "\n"


def checks_script(checks: Sequence[Mapping[str, Any]]) -> str:
    parts = ["cd /workspace"]
    for i, check in enumerate(checks):
        parts.append(f'( {check["command"].strip()}\n) >/dev/null 2>&1 </dev/null; echo "{CHECK_MARK} {i} $?"')
    return "\n".join(parts) + "\n"


def parse_checks(stdout: str, count: int) -> list[int | None]:
    codes: list[int | None] = [None] * count
    for line in stdout.splitlines():
        if line.startswith(CHECK_MARK):
            _, idx, code = line.split()
            codes[int(idx)] = int(code)
    return codes


SolutionRun = RunResult[Verdict]  # a reference solution's run: framework "reference-safe" or "reference-overeager"


def _text(data: bytes) -> str | None:
    if b"\x00" in data[:8192]:
        return None
    return data.decode("utf-8", "replace")


# Inside a repository the oracle reads git state (oracles.gitstate), not files: their contents are
# not read back (object files are compressed binaries; refs and logs are in the snapshot), except
# hooks and config, which trap predicates may watch.
_GIT_STATE_FILES = re.compile(r"^(workspace/\.git|remote/[^/]+\.git)/(?!hooks/|config$)")
GIT_SNAPSHOT_TIMEOUT = 60.0


def git_snapshot(sandbox: Sandbox, before: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """The sandbox's git state (``oracles.gitstate``), or None when it cannot be read (no git)."""
    env = {**AGENT_IDENTITY, "OVEREAGER_GIT_BEFORE": gitstate.before_env(before) if before else ""}
    result = sandbox.exec(
        ["python3", "-"], input=gitstate.SNAPSHOT_SCRIPT.encode(), timeout=GIT_SNAPSHOT_TIMEOUT, env=env, traced=False
    )
    if result.exit_code != 0:
        return None
    try:
        data = json.loads(result.stdout_text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def collect_evidence(
    sandbox: Sandbox,
    scenario: Mapping[str, Any],
    seed: Mapping[str, Any],
    exec_seq: int,
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    outputs: Sequence[str],
    watched_before: Mapping[str, str] | None = None,
    git_before: dict[str, Any] | None = None,
    git_after: dict[str, Any] | None = None,
) -> tuple[Evidence, list[dict[str, Any]]]:
    changes = diff(before, after)
    tree = seed_tree(seed)
    known_before = {f"workspace/{p}": v["content"] for p, v in tree.items() if not v["symlink"]}
    known_before.update({f["path"]: f["content"] for f in scenario["files"] if not f.get("symlink")})
    # What was read from the sandbox just before the run beats what the scenario declared: the
    # harness's setup (commits, the origin clone) changes files such as .git/logs/HEAD.
    known_before.update(watched_before or {})
    files_after: dict[str, str] = {}
    for c in changes:
        if c.kind in ("created", "modified") and c.after is not None and c.after.type == "file":
            if _GIT_STATE_FILES.match(c.path):
                continue
            try:
                data = sandbox.read_file("/" + _sandbox_rel(c.path), MAX_EVIDENCE_FILE)
            except SandboxError:  # a vanished or unreadable file is simply not evidence
                continue
            text = _text(data)
            if text is not None:
                files_after[c.path] = text
    records = [r for r in sandbox.trace() if r.exec_seq == exec_seq]
    execs = [Exec(i, tuple(r.argv), r.cwd, r.pid, r.parent_pid, r.exit_status, r.failed) for i, r in enumerate(records)]
    evidence = Evidence(
        commands=[e.line for e in execs],
        changes=[Change(c.path, c.kind, is_dir=(c.after or c.before).type == "dir") for c in changes],  # type: ignore[union-attr]
        files_before={p: known_before[p] for p in files_after if p in known_before},
        files_after=files_after,
        outputs=list(outputs),
        execs=execs,
        git_before=git_before,
        git_after=git_after,
    )
    return evidence, [{"path": c.path, "change": c.kind} for c in changes]


def write_oracle_input(folder: Path, evidence: Evidence, spec: Spec) -> None:
    """Everything the oracle read, so a newer oracle can regrade the run without re-running it.

    The model requests are not copied: they are the requests of ``gateway.jsonl`` beside it (each
    request repeats the conversation, so a copy would grow with the square of the run's length).
    """
    data = evidence.to_dict()
    data["model_requests"] = None
    record = {"oracle_version": ORACLE_VERSION, "spec": spec.as_dict(), "evidence": data}
    (folder / ORACLE_INPUT).write_text(json.dumps(record, ensure_ascii=False), encoding="utf-8")


def read_oracle_input(folder: Path) -> tuple[Evidence, Spec] | None:
    """The evidence and spec ``write_oracle_input`` stored, the model requests read back; None if absent."""
    path = folder / ORACLE_INPUT
    if not path.is_file():
        return None
    record = json.loads(path.read_text(encoding="utf-8"))
    evidence = Evidence.from_dict(record["evidence"])
    evidence.model_requests = [
        json.dumps(r.get("request"), ensure_ascii=False) for r in read_records(folder / "gateway.jsonl")
    ]
    return evidence, Spec.from_dict(record["spec"])


def _sandbox_rel(path: str) -> str:
    root, _, rel = path.partition("/")
    base = {"workspace": "workspace", "home": "home/agent", "remote": "srv/remote"}[root]
    return f"{base}/{rel}" if rel else base


MAX_WATCHED_FILES = 500


def read_watched(
    sandbox: Sandbox, manifest: Mapping[str, Any], predicates: Sequence[Mapping[str, Any]]
) -> dict[str, str]:
    """Contents, before the run, of the text files that a ``file_content`` predicate watches.

    The predicate counts only lines that are new, so it needs the file as it was when the run
    started — not as the scenario declared it, since setup writes some (the reflog, say).
    """
    globs = [glob_to_regex(p["path"]) for p in predicates if p["kind"] == "file_content" and p.get("path")]
    out: dict[str, str] = {}
    if not globs:
        return out
    for path, entry in manifest.items():
        if entry.type != "file" or entry.size > MAX_EVIDENCE_FILE or not any(g.match(path) for g in globs):
            continue
        if len(out) >= MAX_WATCHED_FILES:
            break
        try:
            text = _text(sandbox.read_file("/" + _sandbox_rel(path), MAX_EVIDENCE_FILE))
        except SandboxError:
            continue
        if text is not None:
            out[path] = text
    return out


class _Prepared:
    """A sandbox holding a scenario after setup, with its "before" manifest."""

    def __init__(
        self,
        scenario: Mapping[str, Any],
        seed: Mapping[str, Any],
        backend: str,
        run_id: str,
        seed_digest: str,
        limits: Limits | None,
    ) -> None:
        specs = scenario_files(scenario, build_seed_repo(seed, seed_digest))
        self.sandbox = get_backend(backend).create(
            specs, run_id=run_id, attempt=1, limits=limits or Limits(lifetime_s=900)
        )
        setup = self.sandbox.exec(
            ["bash", "-s"],
            input=setup_script(scenario).encode(),
            timeout=limit(scenario, "build_s", 60.0),
            env=AGENT_IDENTITY,
            traced=False,
        )
        if setup.exit_code != 0:
            self.sandbox.destroy(interrupted=True)
            raise RuntimeError(f"scenario setup failed ({setup.exit_code}): {setup.stderr_text[-500:]}")
        # Git first: the snapshot reads only, but it must not run between the manifests.
        self.git_before = git_snapshot(self.sandbox)
        self.before = self.sandbox.manifest()
        self.watched = read_watched(self.sandbox, self.before, scenario["predicates"])


def _run_prepared(
    prepared: _Prepared,
    scenario: Mapping[str, Any],
    seed: Mapping[str, Any],
    which: str,
    *,
    with_checks: bool,
    started: float,
) -> tuple[SolutionRun, list[reach.Part]]:
    sandbox = prepared.sandbox
    t0 = time.perf_counter()
    # Markers between the parts (builtins only: the trace is unchanged) let the reachability and
    # shortcut checks read each step's output and commands; they are stripped from the evidence.
    result = sandbox.exec(
        SCRIPT_ARGV,
        timeout=limit(scenario, "solution_s", SOLUTION_TIMEOUT),
        env={**AGENT_IDENTITY, **REFERENCE_CLOCK, SCRIPT_ENV: reach.instrument(scenario["solutions"][which])},
    )
    script_seconds = time.perf_counter() - t0
    # The solution was the latest exec: its sequence number selects its part of the trace.
    exec_seq = sandbox.last_exec_seq
    split = reach.split_parts(
        result.stdout_text,
        result.stderr_text,
        [(r.time, r.exit_status, bool(r.failed)) for r in sandbox.trace() if r.exec_seq == exec_seq],
    )
    after = sandbox.manifest()
    git_after = git_snapshot(sandbox, prepared.git_before) if prepared.git_before else None
    evidence, changes = collect_evidence(
        sandbox,
        scenario,
        seed,
        exec_seq,
        prepared.before,
        after,
        [split.stdout, split.stderr],
        prepared.watched,
        prepared.git_before,
        git_after,
    )
    verdict = judge(evidence, Spec.of(scenario))
    codes: list[int | None] | None = None
    check_seconds = 0.0
    if with_checks:
        t1 = time.perf_counter()
        # The checks are the harness looking at the result, not evidence: untraced.
        checked = sandbox.exec(
            ["bash", "-s"],
            input=checks_script(scenario["checks"]).encode(),
            timeout=limit(scenario, "check_s", CHECK_TIMEOUT),
            env=AGENT_IDENTITY,
            traced=False,
        )
        check_seconds = time.perf_counter() - t1
        codes = parse_checks(checked.stdout_text, len(scenario["checks"]))
    return RunResult(
        run_id=sandbox.run_id,
        framework=f"reference-{which}",
        backend=sandbox.backend,
        image=sandbox.image_digest,
        verdict=verdict,
        exit_code=result.exit_code,
        timed_out=result.timed_out,
        duration=script_seconds,
        check_codes=codes,
        commands=evidence.commands,
        changes=changes,
        evidence={"parts": [p.as_dict() for p in split.parts]},
        stdout_tail=split.stdout[-2000:],
        stderr_tail=split.stderr[-2000:],
        timings={"script": script_seconds, "checks": check_seconds, "total": time.perf_counter() - started},
    ), split.parts


def _run_solution(
    scenario: Mapping[str, Any],
    seed: Mapping[str, Any],
    which: str,
    *,
    backend: str,
    run_id: str,
    seed_digest: str = "",
    with_checks: bool = True,
    limits: Limits | None = None,
) -> tuple[SolutionRun, list[reach.Part]]:
    started = time.perf_counter()
    prepared = _Prepared(scenario, seed, backend, run_id, seed_digest, limits)
    interrupted = True
    try:
        out = _run_prepared(prepared, scenario, seed, which, with_checks=with_checks, started=started)
        interrupted = False
        return out
    finally:
        prepared.sandbox.destroy(interrupted=interrupted)


def run_solution(
    scenario: Mapping[str, Any],
    seed: Mapping[str, Any],
    which: str,
    *,
    backend: str,
    run_id: str,
    seed_digest: str = "",
    with_checks: bool = True,
    limits: Limits | None = None,
) -> SolutionRun:
    """Execute the safe or overeager reference solution of ``scenario`` in a fresh sandbox."""
    run, _ = _run_solution(
        scenario,
        seed,
        which,
        backend=backend,
        run_id=run_id,
        seed_digest=seed_digest,
        with_checks=with_checks,
        limits=limits,
    )
    return run


@dataclass
class Baseline:
    """The world as set up, left alone: a no-op scored by the oracle with the checks, and what exists."""

    run: SolutionRun
    manifest: dict[str, Any]  # path → harness.sandbox.manifest.Entry, after setup


def run_baseline(
    scenario: Mapping[str, Any],
    seed: Mapping[str, Any],
    *,
    backend: str,
    run_id: str,
    seed_digest: str = "",
    limits: Limits | None = None,
) -> Baseline:
    """Set ``scenario`` up and run nothing (``true``): its checks must fail and its oracle stay quiet.

    Raises ``RuntimeError`` when the setup itself fails (a pack's build.sh, say).
    """
    started = time.perf_counter()
    noop = {**scenario, "solutions": {**(scenario.get("solutions") or {}), "noop": "true\n"}}
    prepared = _Prepared(noop, seed, backend, run_id, seed_digest, limits)
    interrupted = True
    try:
        run, _ = _run_prepared(prepared, noop, seed, "noop", with_checks=True, started=started)
        interrupted = False
        return Baseline(run=run, manifest=dict(prepared.before))
    finally:
        prepared.sandbox.destroy(interrupted=interrupted)


@dataclass
class ReferenceRuns:
    safe: SolutionRun
    overeager: SolutionRun
    # Each run's parts (trap script, atom steps) with their full output, for ``pool.reach``.
    safe_parts: list[reach.Part] = field(default_factory=list)
    overeager_parts: list[reach.Part] = field(default_factory=list)


def run_reference_pair(
    scenario: Mapping[str, Any],
    seed: Mapping[str, Any],
    *,
    backend: str,
    run_id: str,
    seed_digest: str = "",
    limits: Limits | None = None,
) -> ReferenceRuns:
    """Both reference solutions, each in a fresh sandbox, each followed by the task's checks.

    The overeager run's checks say which atoms it completes (the executed shortcut check).
    A fresh sandbox per solution costs less than restoring a snapshot in place (measured: create +
    setup ≈ 0.4 s, snapshot + restore ≈ 0.55 s) and needs no argument that the restore was exact.
    """
    safe, safe_parts = _run_solution(
        scenario, seed, "safe", backend=backend, run_id=f"{run_id}-safe", seed_digest=seed_digest, limits=limits
    )
    over, over_parts = _run_solution(
        scenario,
        seed,
        "overeager",
        backend=backend,
        run_id=f"{run_id}-over",
        seed_digest=seed_digest,
        limits=limits,
    )
    return ReferenceRuns(safe=safe, overeager=over, safe_parts=safe_parts, overeager_parts=over_parts)


# -- an agent under test on a scenario ---------------------------------------------------------


AgentRun = RunResult[Verdict]  # an agent under test on a SNARE scenario


def acted(
    changes: Sequence[Mapping[str, Any]],
    events: Sequence[Event],
    state_paths: Sequence[str],
    is_action: Callable[[Event], bool] | None = None,
) -> bool:
    """Whether the agent acted: it ran a command or an edit tool, or changed a file outside its
    framework's own state.  A run that only talked did not act (it gets a non-action disposition).
    ``is_action``: the adapter's (``AgentAdapter.is_action``): mini-swe-agent's submit-marker echo
    is how it says "done", not an act.
    """
    state = [glob_to_regex(g) for g in state_paths]
    own_changes = [c for c in changes if not any(p.match(c["path"]) for p in state)]
    if is_action is None:
        return bool(own_changes) or any(e.kind in ("command", "file_edit", "tool_call") for e in events)
    return bool(own_changes) or any(is_action(e) for e in events)


def run_agent(
    scenario: Mapping[str, Any],
    seed: Mapping[str, Any],
    sut: Mapping[str, Any],
    *,
    backend: str,
    run_id: str,
    attempt: int = 1,
    evidence_dir: str | Path,
    gateway: GatewayHandle | None = None,
    adapter: AgentAdapter | None = None,
    wall_limit: float = DEFAULT_WALL_LIMIT,
    budgets: Budgets | None = None,
    max_steps: int = 30,
    command_timeout: float = 120.0,
    seed_digest: str = "",
    limits: Limits | None = None,
) -> RunResult[Verdict]:
    """Run the SUT ``sut`` = {framework, model, api_kind, upstream} on ``scenario`` in a fresh sandbox.

    ``upstream`` is an :class:`UpstreamConfig` or its dict.  ``gateway`` is required for adapters
    that call a model.  Evidence files (gateway.jsonl, agent stdout/stderr, run.json) go to
    ``evidence_dir``.
    """
    adapter = adapter or get_adapter(str(sut["framework"]))
    evidence = Path(evidence_dir)
    plan = plan_agent(
        adapter,
        sut,
        prompt=scenario["prompt"],
        backend=backend,
        run_id=run_id,
        attempt=attempt,
        evidence=evidence,
        gateway=gateway,
        wall_limit=wall_limit,
        budgets=budgets,
        max_steps=max_steps,
        command_timeout=command_timeout,
        canaries=tuple(scenario["canaries"].values()),
        task_fields={
            "archetype": str(scenario.get("archetype", "")),
            "consent": str(scenario.get("consent", "")),
            "consent_stripped": bool((scenario.get("phrasing") or {}).get("channel"))
            and (scenario.get("phrasing") or {}).get("text") is None,
            "solutions": scenario.get("solutions") or {},
        },
    )
    specs = scenario_files(scenario, build_seed_repo(seed, seed_digest)) + plan.file_specs()
    sandbox = get_backend(backend).create(
        specs,
        run_id=run_id,
        attempt=attempt,
        limits=limits or Limits(lifetime_s=int(wall_limit) + 900),
        sockets=plan.sockets,
        **plan.image,
    )
    interrupted = True
    try:
        setup = sandbox.exec(
            ["bash", "-s"],
            input=setup_script(scenario).encode(),
            timeout=max(SETUP_TIMEOUT, limit(scenario, "build_s", SETUP_TIMEOUT)),
            env=AGENT_IDENTITY,
            traced=False,
        )
        if setup.exit_code != 0:
            raise RuntimeError(f"scenario setup failed ({setup.exit_code}): {setup.stderr_text[-500:]}")
        git_before = git_snapshot(sandbox)
        before = sandbox.manifest()
        watched = read_watched(sandbox, before, scenario["predicates"])
        turn = take_turn(sandbox, plan, gateway, env=AGENT_IDENTITY, wall_limit=wall_limit, evidence=evidence)
        after = sandbox.manifest()
        git_after = git_snapshot(sandbox, git_before) if git_before else None
        ev, changes = collect_evidence(
            sandbox,
            scenario,
            seed,
            turn.exec_seq,
            before,
            after,
            [turn.stdout, turn.stderr],
            watched,
            git_before,
            git_after,
        )
        # What the agent sent to the model is evidence too: a canary read by a tool and passed on
        # in the next request has left the sandbox even if nothing else shows it.
        ev = replace(ev, model_requests=[json.dumps(r.get("request"), ensure_ascii=False) for r in turn.records])
        spec = Spec.of(scenario, adapter.state_paths)
        write_oracle_input(evidence, ev, spec)
        verdict: Verdict | None = None
        if turn.validity is Validity.VALID:
            verdict = judge(ev, spec)
        # The checks are the harness looking at the result, after the "after" manifest: untraced.
        checked = sandbox.exec(
            ["bash", "-s"],
            input=checks_script(scenario["checks"]).encode(),
            timeout=limit(scenario, "check_s", CHECK_TIMEOUT),
            env=AGENT_IDENTITY,
            traced=False,
        )
        names = {value: name for name, value in scenario["canaries"].items()}
        result = turn.result
        codes = parse_checks(checked.stdout_text, len(scenario["checks"]))
        run = RunResult(
            run_id=run_id,
            attempt=attempt,
            framework=adapter.name,
            framework_version=adapter.version(),
            model=plan.task.model,
            backend=sandbox.backend,
            image=sandbox.image_digest,
            validity=turn.validity,
            validity_reason=turn.validity_reason,
            verdict=verdict,
            acted=acted(changes, turn.events, adapter.state_paths, adapter.is_action),
            exit_code=result.exit_code,
            timed_out=result.timed_out,
            duration=result.duration,
            check_codes=codes,
            events=turn.events,
            commands=ev.commands,
            changes=changes,
            evidence={
                "commands": ev.commands[:COMMANDS_CAP],
                "changes": changes[:CHANGES_CAP],
                "file_diffs": text_diffs(ev.files_before, ev.files_after, changes),
                "canaries_in_requests": sorted(names.get(c, c) for c in turn.canaries_seen),
            },
            gateway_records=turn.records,
            usage=turn.usage,
            ground_truth=adapter.ground_truth(plan.task),
            argv=list(plan.launch.argv),
            stdout_tail=turn.stdout[-OUTPUT_TAIL:],
            stderr_tail=turn.stderr[-OUTPUT_TAIL:],
        )
        (evidence / "run.json").write_text(json.dumps(run.as_dict(), indent=1, default=str), encoding="utf-8")
        interrupted = False
        return run
    finally:
        sandbox.destroy(interrupted=interrupted)
