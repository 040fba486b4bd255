"""A SNARE scenario as a world, and its runs: both reference solutions, or an agent under test.

No Django here. Every run goes through the harness's one entry point (:func:`harness.run.run`);
this module says what a SNARE scenario's world is and how its evidence is judged:

1. the world (:func:`world_spec`): the seed's git repository, built once per seed on the host
   (fixed authors and dates, so the commit ids are the same on every machine), the overlay files,
   and a setup script that commits the tracked overlay files as the seed's contributors, creates
   the bare ``origin`` under /srv/remote and finishes what files cannot express; plus the world
   features the scenario declares (``scenario["world"]``: services, packages, sink, terminal);
2. what to collect (:func:`collect_of`): git snapshots, the text of the files a ``file_content``
   predicate watches; the task's checks (:func:`checks_of`), run after the evidence;
3. the judgement (:func:`evidence_of`, then ``oracles.composite.judge``) from the raw run alone.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.agents.base import AgentAdapter, get_adapter
from harness.agents.events import Event
from harness.agents.identity import REFERENCE_CLOCK
from harness.agents.runner import (
    DEFAULT_WALL_LIMIT,
    SETUP_TIMEOUT,
    GatewayHandle,
    plan_agent,
    read_records,
    text_diffs,
)
from harness.gateway.registry import Budgets
from harness.outcome import CHANGES_CAP, COMMANDS_CAP, OUTPUT_TAIL, RunResult, Validity
from harness.run import AgentActor, Checks, Collect, RawRun, ScriptActor
from harness.run import run as run_in_world
from harness.sandbox.base import Limits
from harness.sandbox.manifest import Change as ManifestChange
from harness.sandbox.manifest import Entry
from harness.sandbox.paths import FileSpec
from harness.world.shims import SHIM_DIR
from harness.world.spec import WorldSpec, features_from
from oracles.composite import ORACLE_VERSION, Spec, Verdict, judge
from oracles.globs import glob_to_regex
from oracles.predicates import Change, Evidence, Exec
from oracles.scheduler import Mutations, apply_mutations
from pool import reach
from pool.materialize import seed_tree

SOLUTION_TIMEOUT = 180.0
CHECK_TIMEOUT = 180.0
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


def _sandbox_rel(path: str) -> str:
    root, _, rel = path.partition("/")
    base = {"workspace": "workspace", "home": "home/agent", "remote": "srv/remote"}[root]
    return f"{base}/{rel}" if rel else base


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

# Inside a repository the oracle reads git state (oracles.gitstate), not files: their contents are
# not read back (object files are compressed binaries; refs and logs are in the snapshot), except
# hooks and config, which trap predicates may watch.
_GIT_STATE_FILES = re.compile(r"^(workspace/\.git|remote/[^/]+\.git)/(?!hooks/|config$)")


def mutate(
    scenario: Mapping[str, Any],
    seed: Mapping[str, Any],
    mutations: Mapping[str, Any] | None,
    texts: Mapping[str, Any] | None,
) -> tuple[dict[str, Any], list[Any]]:
    """The scenario with a run's mutation plan applied, before its world is built (a fresh dict).

    Returns the mutated scenario and the mutations as applied (``oracles.scheduler``).  A file a
    mutation adds never lands on a file the seed or a pack's build.sh already makes.
    """
    out = json.loads(json.dumps(scenario))
    if not mutations or not mutations.get("operators"):
        return out, []
    mutated = apply_mutations(
        out["prompt"],
        out["files"],
        Mutations.from_dict(mutations),
        texts or {},
        # A pack scenario's files are made by its build.sh: the import recorded their paths.
        taken_paths=[f"workspace/{p}" for p in seed_tree(seed)] + list(out.get("built_paths") or []),
    )
    out["prompt"] = mutated.prompt
    out["files"] = mutated.files
    return out, mutated.applied


def world_spec(scenario: Mapping[str, Any], seed: Mapping[str, Any], seed_digest: str = "") -> WorldSpec:
    """The scenario's world: files, setup, features (a mutation changes ``scenario`` before this)."""
    return WorldSpec(
        files=tuple(scenario_files(scenario, build_seed_repo(seed, seed_digest))),
        setup=setup_script(scenario),
        setup_timeout=max(SETUP_TIMEOUT, limit(scenario, "build_s", SETUP_TIMEOUT)),
        **features_from(scenario.get("world")),
    )


def collect_of(scenario: Mapping[str, Any]) -> Collect:
    """Git state, and the files a ``file_content`` predicate watches (it compares old and new lines)."""
    watch = tuple(
        glob_to_regex(p["path"]).pattern
        for p in scenario["predicates"]
        if p["kind"] == "file_content" and p.get("path")
    )
    return Collect(git=True, watch=watch, skip_text=_GIT_STATE_FILES.pattern)


def checks_of(scenario: Mapping[str, Any]) -> Checks:
    return Checks(checks_script(scenario["checks"]), limit(scenario, "check_s", CHECK_TIMEOUT))


def execs_of(raw: RawRun) -> list[Exec]:
    """The oracle's view of the trace.  A start the world's shim answered itself (sudo, a missing
    tool) ran nothing: it is kept as issued, like a program that could not start."""
    out = []
    for i, r in enumerate(raw.trace):
        failed = r.failed
        if failed is None and r.shim and r.filename == f"{SHIM_DIR}/{r.shim}":
            failed = "shim"
        out.append(Exec(i, tuple(r.argv), r.cwd, r.pid, r.parent_pid, r.exit_status, failed))
    return out


def change_of(c: ManifestChange) -> Change:
    """A manifest change as the oracle reads it, with the permission bits before and after.

    A symlink has no mode of its own (its 0777 is nothing a ``chmod`` gave it), so none is kept.
    """
    entry = c.after or c.before
    assert entry is not None  # a change has at least one side

    def bits(e: Entry | None) -> int | None:
        return e.mode & 0o7777 if e is not None and e.type != "symlink" else None

    return Change(c.path, c.kind, is_dir=entry.type == "dir", old_mode=bits(c.before), mode=bits(c.after))


def evidence_of(
    raw: RawRun, scenario: Mapping[str, Any], seed: Mapping[str, Any], outputs: Sequence[str]
) -> tuple[Evidence, list[dict[str, Any]]]:
    """The composite oracle's evidence from a raw run, and the changes as the run record lists them."""
    tree = seed_tree(seed)
    known_before = {f"workspace/{p}": v["content"] for p, v in tree.items() if not v["symlink"]}
    known_before.update({f["path"]: f["content"] for f in scenario["files"] if not f.get("symlink")})
    # What was read from the sandbox just before the run beats what the scenario declared: the
    # harness's setup (commits, the origin clone) changes files such as .git/logs/HEAD.
    known_before.update(raw.texts_before)
    execs = execs_of(raw)
    # A deleted file's text as it was: a ``file_content`` predicate on removed lines reads it.
    gone = [c.path for c in raw.changes if c.kind in ("deleted", "type")]
    evidence = Evidence(
        commands=[e.line for e in execs],
        changes=[change_of(c) for c in raw.changes],
        files_before={p: known_before[p] for p in [*raw.texts_after, *gone] if p in known_before},
        files_after=dict(raw.texts_after),
        outputs=list(outputs),
        execs=execs,
        git_before=raw.git_before,
        git_after=raw.git_after,
    )
    return evidence, [{"path": c.path, "change": c.kind} for c in raw.changes]


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


@dataclass
class Executed:
    """A reference solution's run before any oracle judged it: everything re-judging needs.

    Stored by a pool build that is asked to keep executions (``pool.building``), so a build after
    an oracle change re-judges what ran instead of running it again; its dict form is JSON.
    """

    evidence: Evidence
    changes: list[dict[str, Any]]
    check_codes: list[int | None] | None
    parts: list[reach.Part]
    exit_code: int
    timed_out: bool
    backend: str
    image: str
    stdout: str
    stderr: str
    timings: dict[str, float]
    checks_timed_out: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "evidence": self.evidence.to_dict(),
            "changes": self.changes,
            "check_codes": self.check_codes,
            "parts": [p.to_dict() for p in self.parts],
            "exit_code": self.exit_code,
            "timed_out": self.timed_out,
            "backend": self.backend,
            "image": self.image,
            "stdout": self.stdout,
            "stderr": self.stderr,
            "timings": self.timings,
            "checks_timed_out": self.checks_timed_out,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Executed:
        return cls(
            evidence=Evidence.from_dict(data["evidence"]),
            changes=list(data.get("changes") or []),
            check_codes=data.get("check_codes"),
            parts=[reach.Part.from_dict(p) for p in data.get("parts") or []],
            exit_code=int(data.get("exit_code") or 0),
            timed_out=bool(data.get("timed_out")),
            backend=str(data.get("backend", "")),
            image=str(data.get("image", "")),
            stdout=str(data.get("stdout", "")),
            stderr=str(data.get("stderr", "")),
            timings={k: float(v) for k, v in (data.get("timings") or {}).items()},
            checks_timed_out=bool(data.get("checks_timed_out")),
        )


def execute_solution(
    scenario: Mapping[str, Any],
    seed: Mapping[str, Any],
    which: str,
    *,
    backend: str,
    run_id: str,
    seed_digest: str = "",
    with_checks: bool = True,
    limits: Limits | None = None,
) -> Executed:
    """Run one reference solution in a fresh world and keep what the oracle and the checks read."""
    # Markers between the parts (builtins only: the trace is unchanged) let the reachability and
    # shortcut checks read each step's output and commands; they are stripped from the evidence.
    raw = run_in_world(
        world_spec(scenario, seed, seed_digest),
        ScriptActor(
            reach.instrument(scenario["solutions"][which]),
            timeout=limit(scenario, "solution_s", SOLUTION_TIMEOUT),
            env=REFERENCE_CLOCK,
            name=which,
        ),
        collect=collect_of(scenario),
        checks=checks_of(scenario) if with_checks else None,
        backend=backend,
        run_id=run_id,
        limits=limits or Limits(lifetime_s=900),
    )
    split = reach.split_parts(raw.stdout, raw.stderr, [(r.time, r.exit_status, bool(r.failed)) for r in raw.trace])
    evidence, changes = evidence_of(raw, scenario, seed, [split.stdout, split.stderr])
    return Executed(
        evidence=evidence,
        changes=changes,
        check_codes=parse_checks(raw.checks_stdout, len(scenario["checks"])) if raw.checks_stdout is not None else None,
        parts=split.parts,
        exit_code=raw.result.exit_code,
        timed_out=raw.result.timed_out,
        backend=raw.backend,
        image=raw.image,
        stdout=split.stdout,
        stderr=split.stderr,
        timings={
            "script": raw.timings["turn"],
            "checks": raw.timings.get("checks", 0.0),
            "total": raw.timings["total"],
        },
        checks_timed_out=raw.checks_timed_out,
    )


def judge_solution(executed: Executed, scenario: Mapping[str, Any], which: str, run_id: str) -> SolutionRun:
    """A reference run's record, judged by the current oracle."""
    ev = executed.evidence
    return RunResult(
        run_id=run_id,
        framework=f"reference-{which}",
        backend=executed.backend,
        image=executed.image,
        verdict=judge(ev, Spec.of(scenario)),
        exit_code=executed.exit_code,
        timed_out=executed.timed_out,
        duration=executed.timings.get("script", 0.0),
        check_codes=executed.check_codes,
        commands=ev.commands,
        changes=executed.changes,
        evidence={"parts": [p.as_dict() for p in executed.parts]},
        stdout_tail=executed.stdout[-2000:],
        stderr_tail=executed.stderr[-2000:],
        timings=dict(executed.timings),
        checks_timed_out=executed.checks_timed_out,
    )


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
    executed = execute_solution(
        scenario,
        seed,
        which,
        backend=backend,
        run_id=run_id,
        seed_digest=seed_digest,
        with_checks=with_checks,
        limits=limits,
    )
    return judge_solution(executed, scenario, which, run_id), executed.parts


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
    """Execute the safe or overeager reference solution of ``scenario`` in a fresh world."""
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

    Raises ``harness.world.WorldError`` when the setup itself fails (a pack's build.sh, say).
    """
    noop = {**scenario, "solutions": {**(scenario.get("solutions") or {}), "noop": "true\n"}}
    raw = run_in_world(
        world_spec(noop, seed, seed_digest),
        ScriptActor("true\n", env=REFERENCE_CLOCK, name="noop"),
        collect=collect_of(noop),
        checks=checks_of(noop),
        backend=backend,
        run_id=run_id,
        limits=limits or Limits(lifetime_s=900),
    )
    evidence, changes = evidence_of(raw, noop, seed, [raw.stdout, raw.stderr])
    run = RunResult(
        run_id=run_id,
        framework="reference-noop",
        backend=raw.backend,
        image=raw.image,
        verdict=judge(evidence, Spec.of(noop)),
        exit_code=raw.result.exit_code,
        timed_out=raw.result.timed_out,
        duration=raw.timings["turn"],
        check_codes=parse_checks(raw.checks_stdout or "", len(noop["checks"])),
        commands=evidence.commands,
        changes=changes,
        stdout_tail=raw.stdout[-2000:],
        stderr_tail=raw.stderr[-2000:],
        timings={
            "script": raw.timings["turn"],
            "checks": raw.timings.get("checks", 0.0),
            "total": raw.timings["total"],
        },
        checks_timed_out=raw.checks_timed_out,
    )
    return Baseline(run=run, manifest=dict(raw.before))


@dataclass
class ReferenceRuns:
    safe: SolutionRun
    overeager: SolutionRun
    # Each run's parts (trap script, atom steps) with their full output, for ``pool.reach``.
    safe_parts: list[reach.Part] = field(default_factory=list)
    overeager_parts: list[reach.Part] = field(default_factory=list)
    # What ran, before judgement ({"safe": Executed.to_dict(), "overeager": …}): a store of
    # executions keeps it, and a later build re-judges it instead of running the pair again.
    executed: dict[str, Any] = field(default_factory=dict)


def run_reference_pair(
    scenario: Mapping[str, Any],
    seed: Mapping[str, Any],
    *,
    backend: str,
    run_id: str,
    seed_digest: str = "",
    limits: Limits | None = None,
    executed: Mapping[str, Any] | None = None,
) -> ReferenceRuns:
    """Both reference solutions, each in a fresh world, each followed by the task's checks.

    The overeager run's checks say which atoms it completes (the executed shortcut check).
    ``executed`` (a pair's stored ``ReferenceRuns.executed``) is judged again instead of run.
    """
    runs: dict[str, Executed] = {}
    for which, suffix in (("safe", "safe"), ("overeager", "over")):
        if executed and which in executed:
            runs[which] = Executed.from_dict(executed[which])
        else:
            runs[which] = execute_solution(
                scenario,
                seed,
                which,
                backend=backend,
                run_id=f"{run_id}-{suffix}",
                seed_digest=seed_digest,
                limits=limits,
            )
    return ReferenceRuns(
        safe=judge_solution(runs["safe"], scenario, "safe", f"{run_id}-safe"),
        overeager=judge_solution(runs["overeager"], scenario, "overeager", f"{run_id}-over"),
        safe_parts=runs["safe"].parts,
        overeager_parts=runs["overeager"].parts,
        executed={which: e.to_dict() for which, e in runs.items()},
    )


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
    mutations: Mapping[str, Any] | None = None,
    mutation_texts: Mapping[str, Any] | None = None,
) -> RunResult[Verdict]:
    """Run the SUT ``sut`` = {framework, model, api_kind, upstream} on ``scenario`` in a fresh world.

    ``upstream`` is an :class:`UpstreamConfig` or its dict.  ``gateway`` is required for adapters
    that call a model.  Evidence files (gateway.jsonl, agent stdout/stderr, run.json) go to
    ``evidence_dir``.  ``mutations`` (the scheduler's plan for this run) change the scenario
    before its world is built; the result records the prompt the agent got and what was applied.
    """
    scenario, applied = mutate(scenario, seed, mutations, mutation_texts)
    world = world_spec(scenario, seed, seed_digest)
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
            "terminal": world.terminal,
        },
    )
    raw = run_in_world(
        world,
        AgentActor(plan, gateway, wall_limit, evidence),
        collect=collect_of(scenario),
        checks=checks_of(scenario),
        backend=backend,
        run_id=run_id,
        attempt=attempt,
        limits=limits,
    )
    turn = raw.agent
    assert turn is not None
    ev, changes = evidence_of(raw, scenario, seed, [turn.stdout, turn.stderr])
    # What the agent sent to the model is evidence too: a canary read by a tool and passed on
    # in the next request has left the sandbox even if nothing else shows it.
    ev = replace(ev, model_requests=[json.dumps(r.get("request"), ensure_ascii=False) for r in turn.records])
    spec = Spec.of(scenario, adapter.state_paths)
    write_oracle_input(evidence, ev, spec)
    verdict = judge(ev, spec) if turn.validity is Validity.VALID else None
    names = {value: name for name, value in scenario["canaries"].items()}
    result = turn.result
    run = RunResult(
        run_id=run_id,
        attempt=attempt,
        framework=adapter.name,
        framework_version=adapter.version(),
        model=plan.task.model,
        backend=raw.backend,
        image=raw.image,
        validity=turn.validity,
        validity_reason=turn.validity_reason,
        verdict=verdict,
        acted=acted(changes, turn.events, adapter.state_paths, adapter.is_action),
        exit_code=result.exit_code,
        timed_out=result.timed_out,
        duration=result.duration,
        check_codes=parse_checks(raw.checks_stdout or "", len(scenario["checks"])),
        events=turn.events,
        commands=ev.commands,
        changes=changes,
        evidence={
            "commands": ev.commands[:COMMANDS_CAP],
            "changes": changes[:CHANGES_CAP],
            "file_diffs": text_diffs(ev.files_before, ev.files_after, changes),
            "canaries_in_requests": sorted(names.get(c, c) for c in turn.canaries_seen),
            "world": raw.records.as_dict(),
        },
        gateway_records=turn.records,
        usage=turn.usage,
        ground_truth=adapter.ground_truth(plan.task),
        argv=list(plan.launch.argv),
        stdout_tail=turn.stdout[-OUTPUT_TAIL:],
        stderr_tail=turn.stderr[-OUTPUT_TAIL:],
        prompt=str(scenario["prompt"]),
        applied_mutations=list(applied),
    )
    (evidence / "run.json").write_text(json.dumps(run.as_dict(), indent=1, default=str), encoding="utf-8")
    return run
