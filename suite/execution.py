"""Running a task family in a sandbox: environment, evidence, oracle. No Django.

A :class:`TaskEnvironment` is one run's world: the workspace (with the family's git repository
and its bare remote under ``/srv/remote``), an :class:`~suite.emulators.service.EmulatorService`
holding the emulated state on the host, and a sandbox whose PATH starts with the shims. The
intended call sequence — for reference scripts here, and for agents under test later::

    with TaskEnvironment(family, backend="bwrap", run_id=run_id) as env:
        result = env.sandbox.exec(agent_argv, timeout=..., env=env.agent_env(extra))   # the agent's turn(s)
        evidence = env.collect([env.sandbox.last_exec_seq])                           # after the last one
        verdict = env.score(evidence)                                                 # suite.oracle.Verdict
        env.reset()                                                                   # optional: run again in place

``env.run_script(text)`` is the reference-script form of the agent's turn (the script travels in
an environment variable, stdin is /dev/null for everything it starts). ``collect`` gathers the
oracle's evidence: the objects before and after — emulated objects, workspace files
(``file/workspace/<path>``), git refs of the workspace and of every bare remote
(``git/<repo>/<ref>``) — the emulator call log and the executed-command trace of the given execs.

Nothing harness-only enters the sandbox: ground truth, reset and prompts stay here; the state is
reachable only through the read-only socket mount.
"""

from __future__ import annotations

import io
import json
import os
import shlex
import subprocess
import tarfile
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from content.canonical import digest_of
from harness.agents.base import AgentAdapter, get_adapter
from harness.agents.identity import AGENT_IDENTITY, REFERENCE_CLOCK, SCRIPT_ARGV, SCRIPT_ENV
from harness.agents.runner import DEFAULT_WALL_LIMIT, GatewayHandle, plan_agent, take_turn
from harness.gateway.registry import Budgets
from harness.outcome import OUTPUT_TAIL, RunResult
from harness.sandbox.base import DEFAULT_PATH, ExecResult, Limits, Sandbox, get_backend
from harness.sandbox.manifest import Manifest
from harness.sandbox.paths import FileSpec, parent_dirs
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
    """One family, one sandbox, one emulator service: see the module docstring for the sequence."""

    def __init__(
        self,
        family: Mapping[str, Any],
        *,
        backend: str,
        run_id: str,
        attempt: int = 1,
        limits: Limits | None = None,
        digest: str | None = None,
        extra_files: Sequence[FileSpec] = (),
        sockets: Mapping[str, str] | None = None,
        image: str | None = None,
    ) -> None:
        """``extra_files`` (an agent adapter's files, under ``home/``) and ``sockets`` (the model
        gateway's directory) are added to the sandbox next to the family's files and the emulator
        mount; files an agent framework writes under ``home/`` are not objects of the oracle."""
        self.family = family
        self.extra_files = list(extra_files)
        self.extra_sockets = dict(sockets or {})
        # An agent CLI's image layer (docker only); None = the backend's base image.
        self.image = image
        self.backend = backend
        self.run_id = run_id
        self.attempt = attempt
        self.limits = limits or Limits(lifetime_s=900)
        self.digest = digest
        self.truth = GroundTruth.from_data(family["ground_truth"])
        self.specs: list[FileSpec] = []
        self.initial_refs: dict[str, Any] = {}
        self.service: EmulatorService | None = None
        self.sandbox: Sandbox | None = None
        self.before: dict[str, Any] = {}
        self._before_manifest: Manifest = Manifest()
        self._initial_bytes: dict[str, bytes] = {}
        self._seq_floor = 0

    # -- lifecycle ----------------------------------------------------------------------

    def __enter__(self) -> Self:
        self.specs, self.initial_refs = build_files(self.family, self.digest)
        self._initial_bytes = {s.path: s.content for s in self.specs if s.path.startswith("workspace/")}
        self.service = EmulatorService(self.family["runtime"].get("state") or {}, self._tools())
        self.service.start()
        try:
            self.sandbox = get_backend(self.backend).create(
                [*self.specs, *self.extra_files],
                run_id=self.run_id,
                attempt=self.attempt,
                limits=self.limits,
                sockets={**self.extra_sockets, self.service.directory: MOUNT},
                **({"image": self.image} if self.image else {}),
            )
            self._snapshot_before()
        except BaseException:
            self.close(interrupted=True)
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close(interrupted=exc is not None)

    def close(self, interrupted: bool = False) -> None:
        if self.sandbox is not None:
            self.sandbox.destroy(interrupted=interrupted)
            self.sandbox = None
        if self.service is not None:
            self.service.stop()
            self.service = None

    def _tools(self) -> list[str]:
        return [t for t in self.family["runtime"]["tools"] if t != "git"]

    @property
    def _sb(self) -> Sandbox:
        assert self.sandbox is not None, "TaskEnvironment is not entered"
        return self.sandbox

    @property
    def _svc(self) -> EmulatorService:
        assert self.service is not None, "TaskEnvironment is not entered"
        return self.service

    # -- the agent's side -----------------------------------------------------------------

    def agent_env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """Environment of the agent's exec: shims first on PATH, the family's variables."""
        env = {**AGENT_IDENTITY, **(self.family["runtime"].get("env") or {}), **(extra or {})}
        env["PATH"] = EmulatorService.sandbox_path(DEFAULT_PATH)
        return env

    def run_script(self, script: str, *, timeout: float = SCRIPT_TIMEOUT, reference_clock: bool = True) -> ExecResult:
        env = self.agent_env({**(REFERENCE_CLOCK if reference_clock else {}), SCRIPT_ENV: script})
        return self._sb.exec(SCRIPT_ARGV, timeout=timeout, env=env)

    # -- evidence -------------------------------------------------------------------------

    def _refs(self) -> dict[str, Any]:
        if not self.family["runtime"].get("git"):
            return {}
        res = self._sb.exec(["bash", "-c", REFS_SCRIPT], timeout=30, env=AGENT_IDENTITY, traced=False)
        return parse_refs(res.stdout_text)

    def _watched(self) -> set[str]:
        """Workspace files whose text the oracle compares: the intended ones (for lines/match)."""
        return {e.id[len("file/") :] for e in self.truth.intended if e.id.startswith("file/workspace/")}

    def _snapshot_before(self) -> None:
        self._before_manifest = self._sb.manifest()
        self._seq_floor = self._sb.last_exec_seq
        self._refs_before = dict(self.initial_refs)
        self.before = self._objects(self._before_manifest, self._refs_before, self._svc.objects(), set())

    def _objects(
        self, manifest: Manifest, refs: Mapping[str, Any], emulated: Mapping[str, Any], changed_files: set[str]
    ) -> dict[str, Any]:
        watched = self._watched() | changed_files
        texts: dict[str, str | None] = {}
        for path in watched:
            entry = manifest.get(path)
            if entry is None or entry.type != "file":
                continue
            if manifest is self._before_manifest:
                data = self._initial_bytes.get(path)
                texts[path] = _text(data) if data is not None else None
            else:
                try:
                    texts[path] = _text(self._sb.read_file("/" + path, MAX_TEXT + 1))
                except Exception:  # a file the agent made unreadable is compared by hash
                    texts[path] = None
        return {**emulated, **file_objects(manifest, texts), **refs}

    def collect(self, exec_seqs: Iterable[int] | None = None) -> Evidence:
        """Evidence of everything since the environment was created (or last reset).

        ``exec_seqs`` selects whose commands count (default: every exec since then); the harness's
        own setup execs run untraced and never appear.
        """
        after_manifest = self._sb.manifest()
        before_m = self._before_manifest
        changed_files = {
            k
            for k in set(before_m) | set(after_manifest)
            if k.startswith("workspace/")
            and (before_m.get(k) != after_manifest.get(k))
            and (after_manifest.get(k) or before_m.get(k)).type == "file"  # type: ignore[union-attr]
        }
        # Files whose text is compared must be read on both sides; the "before" side comes from
        # the initial specs (what was copied in), so only files that existed then can have text.
        before = self._objects(before_m, self._refs_before, self.before_emulated(), changed_files)
        after = self._objects(after_manifest, self._refs(), self._svc.objects(), changed_files)
        seqs = set(exec_seqs) if exec_seqs is not None else None
        commands = [
            list(r.argv)
            for r in self._sb.trace()
            if r.exec_seq > self._seq_floor and (seqs is None or r.exec_seq in seqs) and not r.failed
        ]
        return Evidence(before=before, after=after, calls=list(self._svc.calls), commands=commands)

    def before_emulated(self) -> dict[str, Any]:
        return {k: v for k, v in self.before.items() if not k.startswith(("file/", "git/"))}

    def score(self, evidence: Evidence) -> Verdict:
        return score(evidence.before, evidence.after, self.truth, calls=evidence.calls, commands=evidence.commands)

    # -- harness-only reset ---------------------------------------------------------------

    def reset(self) -> list[dict[str, Any]]:
        """Restore what the family's ``reset.restore`` names (default: state, workspace, remotes).

        Done from the harness side: the emulated state is replaced in the service; files are
        removed and re-extracted by an untraced exec fed a tar of the initial files, so nothing of
        the reset is visible to, or recorded as, the agent. Returns the call log it discards.
        """
        restore = (self.family.get("reset") or {}).get("restore", ["state", "workspace", "remotes"])
        old = self._svc.reset() if "state" in restore else list(self._svc.calls)
        roots = [r for r, name in (("/workspace", "workspace"), ("/srv/remote", "remotes")) if name in restore]
        if roots:
            buf = io.BytesIO()
            with tarfile.open(fileobj=buf, mode="w") as tar:
                # Directories first, 0755 like the backends create them, so modes match the start.
                for d in parent_dirs(self.specs):
                    root = "workspace" if d.startswith("workspace/") else "srv/remote"
                    if f"/{root}" not in roots:
                        continue
                    info = tarfile.TarInfo(f"{root}/{d.split('/', 1)[1]}")
                    info.type = tarfile.DIRTYPE
                    info.mode = 0o755
                    tar.addfile(info)
                for spec in self.specs:
                    root = "workspace" if spec.path.startswith("workspace/") else "srv/remote"
                    if f"/{root}" not in roots:
                        continue
                    name = f"{root}/{spec.path.split('/', 1)[1]}"
                    info = tarfile.TarInfo(name)
                    info.size = len(spec.content)
                    info.mode = spec.mode
                    info.mtime = 0
                    tar.addfile(info, io.BytesIO(spec.content))
            script = (
                "set -e\n"
                + "".join(f"find {r} -mindepth 1 -delete\n" for r in roots)
                + "tar -xf - -C / --no-same-owner\n"
            )
            res = self._sb.exec(["bash", "-c", script], timeout=60, input=buf.getvalue(), traced=False)
            if res.exit_code != 0:
                raise RuntimeError(f"reset failed ({res.exit_code}): {res.stderr_text[-500:]}")
        self._snapshot_before()
        return old


ReferenceRun = RunResult[Verdict]  # a reference script's run: framework "reference-<which>"


def reference_script(family: Mapping[str, Any], which: str) -> str:
    if which not in REFERENCES:
        raise ValueError(f"unknown reference {which!r}; one of {', '.join(REFERENCES)}")
    return "true\n" if which == "noop" else str(family["references"][which])


def run_in(env: TaskEnvironment, family: Mapping[str, Any], which: str) -> ReferenceRun:
    """Run one reference script in an entered environment and score it."""
    started = time.perf_counter()
    result = env.run_script(reference_script(family, which))
    evidence = env.collect([env._sb.last_exec_seq])
    verdict = env.score(evidence)
    return RunResult(
        run_id=env._sb.run_id,
        framework=f"reference-{which}",
        backend=env._sb.backend,
        image=env._sb.image_digest,
        verdict=verdict,
        acted=verdict.acted,
        exit_code=result.exit_code,
        timed_out=result.timed_out,
        duration=time.perf_counter() - started,
        commands=[shlex.join(c) for c in evidence.commands],
        evidence=evidence.as_dict(),
        stdout_tail=result.stdout_text[-OUTPUT_TAIL:],
        stderr_tail=result.stderr_text[-OUTPUT_TAIL:],
    )


def run_reference(
    family: Mapping[str, Any], which: str, backend: str, *, run_id: str = "", limits: Limits | None = None
) -> ReferenceRun:
    """Execute a reference script ("safe", "wrong_target", "overscope" or "noop") in a fresh sandbox."""
    with TaskEnvironment(
        family, backend=backend, run_id=run_id or f"ref-{family['slug']}-{which}", limits=limits
    ) as env:
        return run_in(env, family, which)


def run_references(
    family: Mapping[str, Any], backend: str, *, run_id: str = "", whiches: Sequence[str] = REFERENCES
) -> dict[str, ReferenceRun]:
    """All reference scripts in one sandbox, with the harness reset between them (exercises reset)."""
    out: dict[str, ReferenceRun] = {}
    with TaskEnvironment(family, backend=backend, run_id=run_id or f"refs-{family['slug']}") as env:
        for i, which in enumerate(whiches):
            if i:
                env.reset()
            out[which] = run_in(env, family, which)
    return out


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
    demo's planted truth: it acts, guesses or stops by the variant's S, B and R), in one sandbox
    reset between variants. Each row says whether the oracle's flags are what the planted action
    implies; a mismatch means the environment does not score an action the same way in every
    variant, which the paper's design (only the wording varies) rules out."""
    from harness.agents.base import AgentTask
    from harness.agents.stochastic import SuiteStochasticAgent
    from harness.gateway.protocols import ApiKind
    from suite.schema import all_prompts, variant

    agent = SuiteStochasticAgent(campaign_seed=seed)
    rows: list[dict[str, Any]] = []
    with TaskEnvironment(family, backend=backend, run_id=f"matrix-{family['slug']}") as env:
        for i, (s, b, r, text) in enumerate(all_prompts(family)):
            if i:
                env.reset()
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
            run = run_in(env, family, action)
            v = run.verdict
            assert v is not None  # run_in always scores
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
    """Run the SUT on one UnderSpecBench prompt of ``family`` (its data form) in a TaskEnvironment.

    ``axes`` = {"s", "b", "r"} levels of the prompt (simulated agents plant their propensities on
    them; real agents never see them). The family oracle scores the run (suite.oracle).
    """
    adapter = adapter or get_adapter(str(sut["framework"]))
    evidence = Path(evidence_dir)
    references = dict(family.get("references") or {})
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
        },
    )
    with TaskEnvironment(
        family,
        backend=backend,
        run_id=run_id,
        attempt=attempt,
        limits=limits or Limits(lifetime_s=int(wall_limit) + 900),
        extra_files=plan.file_specs(),
        sockets=plan.sockets,
        image=plan.image.get("image"),
    ) as env:
        assert env.sandbox is not None
        turn = take_turn(env.sandbox, plan, gateway, env=env.agent_env(), wall_limit=wall_limit, evidence=evidence)
        collected = env.collect([turn.exec_seq])
        verdict = env.score(collected)
        result = turn.result
        run = RunResult(
            run_id=run_id,
            attempt=attempt,
            framework=adapter.name,
            framework_version=adapter.version(),
            model=plan.task.model,
            backend=env.sandbox.backend,
            image=env.sandbox.image_digest,
            validity=turn.validity,
            validity_reason=turn.validity_reason,
            verdict=verdict,
            acted=bool(verdict.acted),
            exit_code=result.exit_code,
            timed_out=result.timed_out,
            duration=result.duration,
            events=turn.events,
            commands=[shlex.join(c) for c in collected.commands],
            evidence=collected.as_dict(),
            gateway_records=turn.records,
            usage=turn.usage,
            ground_truth=adapter.ground_truth(plan.task),
            argv=list(plan.launch.argv),
            stdout_tail=turn.stdout[-OUTPUT_TAIL:],
            stderr_tail=turn.stderr[-OUTPUT_TAIL:],
        )
    (evidence / "run.json").write_text(json.dumps(run.as_dict(), indent=1, default=str), encoding="utf-8")
    return run
