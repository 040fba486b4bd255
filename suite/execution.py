"""A task family as a world, and its runs: the reference scripts, or an agent under test. No Django.

Every run goes through the harness's one entry point (:func:`harness.run.run`); this module says
what a family's world is and how its evidence is judged:

* the world (:func:`world_spec`): the workspace with the family's git repository and its bare
  remote under ``/srv/remote`` (built once per family on the host, fixed identities and dates), the
  world's features the family declares, and PATH starting with the emulated CLIs' shims;
* the emulated state lives on the host in an :class:`~suite.emulators.service.EmulatorService`
  (:func:`emulators`), reached from the sandbox only through its read-only socket mount — the
  ground truth, the prompts and the state never enter the sandbox;
* the evidence (:func:`evidence_of`): the objects before and after — emulated objects, workspace
  files (``file/workspace/<path>``), git refs of the workspace and of every bare remote
  (``git/<repo>/<ref>``) — the emulator call log and the executed-command trace of the actor's
  exec, scored by :func:`suite.oracle.score`.

:class:`TaskEnvironment` is a family's world to look around in (the ambiguity check's careful
reader runs its inspection commands there); it judges nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import subprocess
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from content.canonical import digest_of
from harness.agents.base import AgentAdapter, get_adapter
from harness.agents.identity import AGENT_IDENTITY, REFERENCE_CLOCK
from harness.agents.runner import DEFAULT_WALL_LIMIT, GatewayHandle, plan_agent
from harness.gateway.registry import Budgets
from harness.outcome import OUTPUT_TAIL, RunResult
from harness.run import AgentActor, Collect, RawRun, ScriptActor
from harness.run import run as run_in_world
from harness.sandbox.base import DEFAULT_PATH, ExecResult, Limits, Sandbox
from harness.sandbox.manifest import Manifest
from harness.sandbox.paths import FileSpec
from harness.world import World, WorldSpec
from harness.world.spec import features_from
from suite.emulators.service import MOUNT, EmulatorService
from suite.oracle import GroundTruth, Verdict, score

REFERENCES = ("safe", "wrong_target", "overscope", "noop")
SCRIPT_TIMEOUT = 120.0
MAX_TEXT = 256 * 1024
REFS_SCRIPT = r"""
for repo in /workspace /srv/remote/*.git; do
  if [ "$repo" = /workspace ]; then [ -d /workspace/.git ] || continue; name=workspace
  else [ -f "$repo/HEAD" ] || continue; name=$(basename "$repo" .git); fi
  head=$(git -C "$repo" symbolic-ref -q HEAD || git -C "$repo" rev-parse -q --verify HEAD || true)
  printf '%s HEAD %s\n' "$name" "$head"
  git -C "$repo" for-each-ref --format="$name %(refname) %(objectname) %(subject)"
done
"""

_build_cache: dict[str, tuple[list[FileSpec], dict[str, Any]]] = {}
_build_lock = threading.Lock()


def _split_author(author: str) -> tuple[str, str]:
    name, _, email = author.partition(" <")
    return name, email.rstrip(">")


def _git_env(home: str, author: str, date: str) -> dict[str, str]:
    name, email = _split_author(author)
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": home,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "LC_ALL": "C",
        "GIT_AUTHOR_NAME": name,
        "GIT_AUTHOR_EMAIL": email,
        "GIT_COMMITTER_NAME": name,
        "GIT_COMMITTER_EMAIL": email,
        "GIT_AUTHOR_DATE": date,
        "GIT_COMMITTER_DATE": date,
    }


def parse_refs(text: str) -> dict[str, Any]:
    """``git/<repo>/<ref>`` objects from the output of :data:`REFS_SCRIPT`."""
    out: dict[str, Any] = {}
    for line in text.splitlines():
        parts = line.split(" ", 3)
        if len(parts) < 3:
            continue
        repo, ref = parts[0], parts[1]
        if ref == "HEAD":
            out[f"git/{repo}/HEAD"] = {"ref": parts[2]}
            continue
        out[f"git/{repo}/{ref}"] = {"commit": parts[2], "subject": parts[3] if len(parts) > 3 else ""}
    return out


def _raw_date(iso_date: str) -> str:
    """``2026-02-20T12:00:00+00:00`` -> ``1771588800 +0000`` (git's raw date format)."""
    when = datetime.fromisoformat(iso_date.replace("Z", "+00:00"))
    offset = when.utcoffset() or timedelta(0)
    minutes = int(offset.total_seconds() // 60)
    sign = "+" if minutes >= 0 else "-"
    return f"{int(when.timestamp())} {sign}{abs(minutes) // 60:02d}{abs(minutes) % 60:02d}"


def _data(text: str) -> bytes:
    raw = text.encode("utf-8")
    return b"data %d\n%s\n" % (len(raw), raw)


def _commit_block(ref: str, author: str, date: str, message: str, parent: str | None, ops: list[bytes]) -> bytes:
    ident = f"{author} {_raw_date(date)}"
    head = f"commit {ref}\nauthor {ident}\ncommitter {ident}\n".encode()
    return head + _data(message) + (f"from {parent}\n".encode() if parent else b"") + b"".join(ops) + b"\n"


def _file_ops(changes: Sequence[Mapping[str, Any]]) -> list[bytes]:
    ops = []
    for f in changes:
        if f.get("delete"):
            ops.append(f"D {f['path']}\n".encode())
        else:
            mode = "100755" if int(f.get("mode", "0644"), 8) & 0o100 else "100644"
            ops.append(f"M {mode} inline {f['path']}\n".encode() + _data(f.get("content", "")))
    return ops


def _build_git(
    tmp: Path,
    ws: Path,
    remote_root: Path,
    git: Mapping[str, Any],
    files: Sequence[Mapping[str, Any]],
    write: Any,
) -> dict[str, Any]:
    """The workspace clone and its bare remote, built with one ``git fast-import`` stream.

    One process writes every commit, branch and tag (a commit per git invocation costs tens of
    milliseconds each on a loaded machine, and families have many). The result is what a fresh
    ``git clone`` of the remote gives: ``branch`` checked out, the other branches as
    remote-tracking refs, the tags, loose refs (only files are copied into a sandbox).
    """
    branch = git.get("branch", "main")
    remote = git.get("remote", "origin")
    env = _git_env(str(tmp), git["author"], git["date"])

    def run(*args: str, cwd: Path = ws, data: bytes | None = None) -> str:
        done = subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, input=data)
        return done.stdout.decode("utf-8", "replace")

    run("init", "-q", "-b", branch)
    stream: list[bytes] = []
    main_ref = f"refs/heads/{branch}"
    for c in git.get("history", []):
        stream.append(
            _commit_block(
                main_ref, c.get("author") or git["author"], c["date"], c["message"], None, _file_ops(c.get("files", []))
            )
        )
    tracked = [f for f in files if not f.get("untracked")]
    stream.append(
        _commit_block(main_ref, git["author"], git["date"], git["message"], None, [b"deleteall\n", *_file_ops(tracked)])
    )
    tips = {branch: main_ref}
    prefix = f"refs/remotes/{remote}/" if remote else "refs/heads/"
    for b in git.get("branches", []):
        base = b.get("base") or branch
        if base not in tips:
            raise ValueError(f"branch {b['name']!r} is based on {base!r}, which is defined after it")
        ref = prefix + b["name"]
        for i, c in enumerate(b["commits"]):
            stream.append(
                _commit_block(
                    ref,
                    c.get("author") or git["author"],
                    c["date"],
                    c["message"],
                    tips[base] if i == 0 else None,
                    _file_ops(c.get("files", [])),
                )
            )
        tips[b["name"]] = ref
    for t in git.get("tags", []):
        stream.append(f"reset refs/tags/{t['name']}\nfrom {tips[t['at']]}\n\n".encode())
    if remote:
        stream.append(f"reset {prefix}{branch}\nfrom {main_ref}\n\n".encode())
    run("fast-import", "--quiet", "--date-format=raw", data=b"".join(stream))
    run("reset", "-q", "--hard", main_ref)
    # git tracks only the executable bit; the declared modes are the working tree's.
    for f in tracked:
        (ws / f["path"]).chmod(int(f.get("mode", "0644"), 8))
    if remote:
        bare = remote_root / f"{remote}.git"
        run("init", "-q", "--bare", "-b", branch, str(bare))
        run("push", "-q", str(bare), f"{prefix}*:refs/heads/*", "refs/tags/*:refs/tags/*")
        for sample in (bare / "hooks").glob("*.sample"):
            sample.unlink()
        (ws / ".git" / "refs" / "remotes" / remote / "HEAD").write_text(f"ref: {prefix}{branch}\n")
        with (ws / ".git" / "config").open("a", encoding="utf-8") as cfg:
            cfg.write(f'[remote "{remote}"]\n\turl = /srv/remote/{remote}.git\n')
            cfg.write(f"\tfetch = +refs/heads/*:refs/remotes/{remote}/*\n")
            cfg.write(f'[branch "{branch}"]\n\tremote = {remote}\n\tmerge = refs/heads/{branch}\n')
    # Hook samples are noise in every manifest.
    for sample in (ws / ".git" / "hooks").glob("*.sample"):
        sample.unlink()
    for f in files:
        if f.get("untracked"):
            write(f["path"], f.get("content", ""), f.get("mode", "0644"))
    lines = []
    for name, repo, head_file in [("workspace", ws, ws / ".git" / "HEAD")] + [
        (p.name[:-4], p, p / "HEAD") for p in sorted(remote_root.glob("*.git"))
    ]:
        head = head_file.read_text().strip()
        lines.append(f"{name} HEAD {head[5:] if head.startswith('ref: ') else head}")
        lines.append(run("-C", str(repo), "for-each-ref", f"--format={name} %(refname) %(objectname) %(subject)"))
    return parse_refs("\n".join(lines))


def build_files(family: Mapping[str, Any], digest: str | None = None) -> tuple[list[FileSpec], dict[str, Any]]:
    """The sandbox's initial files (workspace, ``.git``, bare remotes) and the initial git refs.

    Built once per family digest on the host, with fixed identities and dates, so commit ids are
    the same on every machine and every run.
    """
    key = digest or digest_of(dict(family))
    with _build_lock:
        cached = _build_cache.get(key)
    if cached is not None:
        return cached
    rt = family["runtime"]
    files = rt.get("files", [])
    git = rt.get("git")
    specs: list[FileSpec] = []
    refs: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="overeager-family-") as tmp:
        ws = Path(tmp) / "workspace"
        ws.mkdir()
        remote_root = Path(tmp) / "remote"
        remote_root.mkdir()

        def write(path: str, content: str, mode: str) -> None:
            target = ws / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content, encoding="utf-8")
            target.chmod(int(mode, 8))

        if git:
            refs = _build_git(Path(tmp), ws, remote_root, git, files, write)
        else:
            for f in files:
                write(f["path"], f.get("content", ""), f.get("mode", "0644"))
        for top, prefix in ((ws, "workspace"), (remote_root, "remote")):
            for entry in sorted(top.rglob("*")):
                rel = entry.relative_to(top).as_posix()
                if entry.is_file() and not entry.is_symlink():
                    specs.append(FileSpec(f"{prefix}/{rel}", entry.read_bytes(), entry.stat().st_mode & 0o777))
    result = (specs, refs)
    with _build_lock:
        _build_cache[key] = result
    return result


def file_objects(manifest: Manifest, texts: Mapping[str, str | None]) -> dict[str, Any]:
    """``file/workspace/<path>`` objects from a manifest; paths in ``texts`` carry their text."""
    out: dict[str, Any] = {}
    for key, entry in manifest.items():
        if not key.startswith("workspace/"):
            continue
        oid = "file/" + key
        value: dict[str, Any] = {"type": entry.type, "mode": f"{entry.mode:04o}"}
        if entry.type == "symlink":
            value["target"] = entry.target
        elif entry.type == "file":
            if key in texts and texts[key] is not None:
                value["text"] = texts[key]
            else:
                value["sha256"] = entry.sha256
        out[oid] = value
    return out


@dataclass
class Evidence:
    before: dict[str, Any]
    after: dict[str, Any]
    calls: list[dict[str, Any]]
    commands: list[list[str]]
    changes: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        changed = sorted(k for k in set(self.before) | set(self.after) if self.before.get(k) != self.after.get(k))
        return {
            "calls": self.calls,
            "commands": [shlex.join(c) for c in self.commands][:500],
            "changed": changed,
            "objects_before": {k: self.before.get(k) for k in changed},
            "objects_after": {k: self.after.get(k) for k in changed},
        }


def _text(data: bytes) -> str | None:
    if b"\x00" in data[:8192] or len(data) > MAX_TEXT:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


class TaskEnvironment:
    """A family's world and its emulators, entered: for inspecting it (``run_script``), not for runs."""

    def __init__(
        self,
        family: Mapping[str, Any],
        *,
        backend: str,
        run_id: str,
        attempt: int = 1,
        limits: Limits | None = None,
        digest: str | None = None,
    ) -> None:
        self.family = family
        self.backend = backend
        self.run_id = run_id
        self.attempt = attempt
        self.limits = limits or Limits(lifetime_s=900)
        self.digest = digest
        self._stack = contextlib.ExitStack()
        self.service: EmulatorService | None = None
        self.world: World | None = None

    def __enter__(self) -> Self:
        try:
            self.service = self._stack.enter_context(emulators(self.family))
            self.world = self._stack.enter_context(
                World(
                    world_spec(self.family, self.digest),
                    backend=self.backend,
                    run_id=self.run_id,
                    attempt=self.attempt,
                    limits=self.limits,
                    sockets={self.service.directory: MOUNT},
                )
            )
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stack.close()

    @property
    def sandbox(self) -> Sandbox | None:
        return self.world.sandbox if self.world is not None else None

    def run_script(self, script: str, *, timeout: float = SCRIPT_TIMEOUT, reference_clock: bool = True) -> ExecResult:
        assert self.world is not None, "TaskEnvironment is not entered"
        return self.world.run_script(
            script, timeout=timeout, env={**AGENT_IDENTITY, **(REFERENCE_CLOCK if reference_clock else {})}
        )


@contextlib.contextmanager
def emulators(family: Mapping[str, Any]) -> Iterator[EmulatorService]:
    """The family's emulated CLIs and state, served on the host for one run."""
    tools = [t for t in family["runtime"]["tools"] if t != "git"]
    service = EmulatorService(family["runtime"].get("state") or {}, tools)
    service.start()
    try:
        yield service
    finally:
        service.stop()


def world_spec(family: Mapping[str, Any], digest: str | None = None) -> WorldSpec:
    """The family's world: its files, its variables, the shims first on PATH, its features."""
    specs, _ = build_files(family, digest)
    env = {**(family["runtime"].get("env") or {}), "PATH": EmulatorService.sandbox_path(DEFAULT_PATH)}
    return WorldSpec(files=tuple(specs), env=env, **features_from(family.get("world")))


def _watched(family: Mapping[str, Any]) -> set[str]:
    """Workspace files whose text the oracle compares: the intended and allowed ones (for lines/match)."""
    truth = GroundTruth.from_data(family["ground_truth"])
    ids = [e.id for e in truth.intended] + [a.id for a in truth.allowed]
    return {i[len("file/") :] for i in ids if i.startswith("file/workspace/")}


def collect_of(family: Mapping[str, Any]) -> Collect:
    return Collect(
        watch=tuple(re.escape(p) + "$" for p in sorted(_watched(family))),
        strict_text=True,
        probe=REFS_SCRIPT if family["runtime"].get("git") else "",
    )


def evidence_of(
    raw: RawRun, family: Mapping[str, Any], before_emulated: Mapping[str, Any], service: EmulatorService
) -> Evidence:
    """The oracle's objects before and after, the emulator's calls and the actor's commands."""
    specs, initial_refs = build_files(family)
    initial = {s.path: s.content for s in specs if s.path.startswith("workspace/")}
    changed = {
        c.path
        for c in raw.changes
        if c.path.startswith("workspace/") and (c.after or c.before).type == "file"  # type: ignore[union-attr]
    }
    watched = _watched(family) | changed
    texts_before = {p: _text(initial[p]) if p in initial else None for p in watched if p in raw.before}
    texts_after: dict[str, str | None] = {}
    for p in watched:
        entry = raw.after.get(p)
        if entry is None or entry.type != "file":
            continue
        # A file the run changed has its text read after the turn (None if binary or unreadable);
        # a watched file it left alone has the text it had.
        texts_after[p] = raw.texts_after.get(p) if p in changed else texts_before.get(p)
    refs_after = parse_refs(raw.probe_after) if family["runtime"].get("git") else {}
    before = {**before_emulated, **file_objects(raw.before, texts_before), **initial_refs}
    after = {**service.objects(), **file_objects(raw.after, texts_after), **refs_after}
    commands = [list(r.argv) for r in raw.trace if not r.failed]
    return Evidence(before=before, after=after, calls=list(service.calls), commands=commands)


def score_evidence(family: Mapping[str, Any], evidence: Evidence) -> Verdict:
    truth = GroundTruth.from_data(family["ground_truth"])
    return score(evidence.before, evidence.after, truth, calls=evidence.calls, commands=evidence.commands)


ReferenceRun = RunResult[Verdict]  # a reference script's run: framework "reference-<which>"


def reference_script(family: Mapping[str, Any], which: str) -> str:
    if which not in REFERENCES:
        raise ValueError(f"unknown reference {which!r}; one of {', '.join(REFERENCES)}")
    return "true\n" if which == "noop" else str(family["references"][which])


def run_reference(
    family: Mapping[str, Any], which: str, backend: str, *, run_id: str = "", limits: Limits | None = None
) -> ReferenceRun:
    """Execute a reference script ("safe", "wrong_target", "overscope" or "noop") in a fresh world."""
    run_id = run_id or f"ref-{family['slug']}-{which}"
    with emulators(family) as service:
        before_emulated = service.objects()
        raw = run_in_world(
            world_spec(family),
            ScriptActor(reference_script(family, which), timeout=SCRIPT_TIMEOUT, env=REFERENCE_CLOCK, name=which),
            collect=collect_of(family),
            backend=backend,
            run_id=run_id,
            limits=limits or Limits(lifetime_s=900),
            sockets={service.directory: MOUNT},
        )
        evidence = evidence_of(raw, family, before_emulated, service)
    verdict = score_evidence(family, evidence)
    return RunResult(
        run_id=run_id,
        framework=f"reference-{which}",
        backend=raw.backend,
        image=raw.image,
        verdict=verdict,
        acted=verdict.acted,
        exit_code=raw.result.exit_code,
        timed_out=raw.result.timed_out,
        duration=raw.timings["turn"],
        commands=[shlex.join(c) for c in evidence.commands],
        evidence=evidence.as_dict(),
        stdout_tail=raw.stdout[-OUTPUT_TAIL:],
        stderr_tail=raw.stderr[-OUTPUT_TAIL:],
    )


def run_references(
    family: Mapping[str, Any], backend: str, *, run_id: str = "", whiches: Sequence[str] = REFERENCES
) -> dict[str, ReferenceRun]:
    """All reference scripts, each in a fresh world."""
    return {
        which: run_reference(family, which, backend, run_id=f"{run_id or 'refs-' + str(family['slug'])}-{which}")
        for which in whiches
    }


# -- the simulated full matrix ----------------------------------------------------------------------

# What a planted action must score: the flags are not exclusive, so Wrong Target and OverScope
# only require their own flag (and no Safe Success).
PLANTED_FLAGS: dict[str, dict[str, bool]] = {
    "safe": {"acted": True, "safe_success": True, "wrong_target": False, "overscope": False},
    "noop": {"acted": False, "safe_success": False, "wrong_target": False, "overscope": False},
    "wrong_target": {"acted": True, "safe_success": False, "wrong_target": True},
    "overscope": {"acted": True, "safe_success": False, "overscope": True},
}


def simulated_matrix(family: Mapping[str, Any], backend: str, *, seed: int | str = 0) -> list[dict[str, Any]]:
    """Every one of the family's 32 prompt variants, acted on by the seeded simulated agent (the
    demo's planted truth: it acts, guesses or stops by the variant's S, B and R), each in a fresh
    world. Each row says whether the oracle's flags are what the planted action implies; a mismatch
    means the environment does not score an action the same way in every variant, which the
    paper's design (only the wording varies) rules out."""
    from harness.agents.base import AgentTask
    from harness.agents.stochastic import SuiteStochasticAgent
    from harness.gateway.protocols import ApiKind
    from suite.schema import all_prompts, variant

    agent = SuiteStochasticAgent(campaign_seed=seed)
    rows: list[dict[str, Any]] = []
    for s, b, r, text in all_prompts(family):
        name = variant(s, b, r)
        task = AgentTask(
            prompt=text,
            base_url="",
            run_token="",
            model="sim-m1",
            api_kind=ApiKind.ANTHROPIC_MESSAGES,
            run_id=f"{family['slug']}/{name}",
            framework="sim-alpha",
            family=str(family["slug"]),
            axes={"s": s, "b": b, "r": r},
        )
        action = str(agent.decide(task)["action"])
        run = run_reference(family, action, backend, run_id=f"matrix-{family['slug']}-{name}")
        v = run.verdict
        assert v is not None  # reference runs are always scored
        got = {
            "acted": v.acted,
            "safe_success": v.safe_success,
            "wrong_target": v.wrong_target,
            "overscope": v.overscope,
        }
        want = PLANTED_FLAGS[action]
        rows.append(
            {
                "family": family["slug"],
                "variant": name,
                "action": action,
                "flags": got,
                "exit_code": run.exit_code,
                "mismatch": run.exit_code != 0 or any(got[k] != want[k] for k in want),
                "seconds": round(run.duration, 3),
            }
        )
    return rows


# -- an agent under test on a prompt ------------------------------------------------------------


TaskRun = RunResult[Verdict]  # an agent under test on an UnderSpecBench prompt


def run_task(
    family: Mapping[str, Any],
    prompt: str,
    sut: Mapping[str, Any],
    *,
    axes: Mapping[str, int],
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
    limits: Limits | None = None,
) -> RunResult[Verdict]:
    """Run the SUT on one UnderSpecBench prompt of ``family`` (its data form) in its world.

    ``axes`` = {"s", "b", "r"} levels of the prompt (simulated agents plant their propensities on
    them; real agents never see them). The family oracle scores the run (suite.oracle).
    """
    adapter = adapter or get_adapter(str(sut["framework"]))
    evidence = Path(evidence_dir)
    references = dict(family.get("references") or {})
    world = world_spec(family)
    plan = plan_agent(
        adapter,
        sut,
        prompt=prompt,
        backend=backend,
        run_id=run_id,
        attempt=attempt,
        evidence=evidence,
        gateway=gateway,
        wall_limit=wall_limit,
        budgets=budgets,
        max_steps=max_steps,
        command_timeout=command_timeout,
        task_fields={
            "family": str(family["slug"]),
            "axes": dict(axes),
            # The answer key, read only by the reference and stochastic agents (see AgentTask).
            "solutions": {**{k: str(v) for k, v in references.items()}, "noop": "true\n"},
            "terminal": world.terminal,
        },
    )
    with emulators(family) as service:
        before_emulated = service.objects()
        raw = run_in_world(
            world,
            AgentActor(plan, gateway, wall_limit, evidence),
            collect=collect_of(family),
            backend=backend,
            run_id=run_id,
            attempt=attempt,
            limits=limits,
            sockets={service.directory: MOUNT},
        )
        collected = evidence_of(raw, family, before_emulated, service)
    turn = raw.agent
    assert turn is not None
    verdict = score_evidence(family, collected)
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
        acted=bool(verdict.acted),
        exit_code=result.exit_code,
        timed_out=result.timed_out,
        duration=result.duration,
        events=turn.events,
        commands=[shlex.join(c) for c in collected.commands],
        evidence={**collected.as_dict(), "world": raw.records.as_dict()},
        gateway_records=turn.records,
        usage=turn.usage,
        ground_truth=adapter.ground_truth(plan.task),
        argv=list(plan.launch.argv),
        stdout_tail=turn.stdout[-OUTPUT_TAIL:],
        stderr_tail=turn.stderr[-OUTPUT_TAIL:],
        prompt=prompt,
    )
    (evidence / "run.json").write_text(json.dumps(run.as_dict(), indent=1, default=str), encoding="utf-8")
    return run
