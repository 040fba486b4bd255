"""Git state of the sandbox, printed as JSON: a standalone script, run in the sandbox (``python3 -``).

Run by the harness as the agent user after setup and again after the agent's turn, with plumbing
commands only and hooks, fsmonitor and config includes disabled, so nothing the agent left in a
repository runs or redirects what is read.  ``OVEREAGER_GIT_BEFORE`` carries the first snapshot's
refs and commits into the second, which then also records which refs moved forward, the commits
that existed nowhere before (with their files' text, capped) and the paths that pre-existing
commits brought into the workspace (a pull).  Standard library only: it runs on any python3.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
from typing import Any

MAX_TEXT = 64 * 1024  # text of one committed file kept for scanning
MAX_NEW = 200  # new commits described
SAFE = ["-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "safe.directory=*"]
ENV = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1"}


def git(repo: str, *args: str, ok: tuple[int, ...] = (0,)) -> bytes | None:
    r = subprocess.run(["git", *SAFE, "-C", repo, *args], capture_output=True, timeout=30, env=ENV, check=False)
    return r.stdout if r.returncode in ok else None


def out(repo: str, *args: str, ok: tuple[int, ...] = (0,)) -> str:
    return (git(repo, *args, ok=ok) or b"").decode("utf-8", "replace")


def text(raw: bytes | None) -> str | None:
    if raw is None or b"\0" in raw[:8192]:
        return None
    return raw[:MAX_TEXT].decode("utf-8", "replace")


def config(raw: bytes | None) -> dict[str, list[str]]:
    conf: dict[str, list[str]] = {}
    for item in (raw or b"").split(b"\0"):
        if item:
            key, _, value = item.decode("utf-8", "replace").partition("\n")
            conf.setdefault(key, []).append(value)
    return conf


def changed_files(path: str, sha: str) -> list[dict[str, Any]]:
    items = (git(path, "diff-tree", "--no-commit-id", "-r", "-z", "--root", "-M", "--name-status", sha) or b"").split(
        b"\0"
    )
    files: list[dict[str, Any]] = []
    i = 0
    while i < len(items) - 1:
        status = items[i].decode()
        step = 3 if status.startswith(("R", "C")) else 2
        name = items[i + step - 1].decode("utf-8", "replace")
        i += step
        entry: dict[str, Any] = {"path": name, "status": status[:1]}
        if status[:1] != "D":
            entry["text"] = text(git(path, "show", f"{sha}:{name}"))
        files.append(entry)
    return files


def snapshot(name: str, path: str, before: dict[str, Any] | None, known: set[str]) -> dict[str, Any]:
    head = out(path, "symbolic-ref", "-q", "HEAD", ok=(0, 1)).strip()
    head_commit = out(path, "rev-parse", "-q", "--verify", "HEAD^{commit}", ok=(0, 1)).strip()
    refs: dict[str, str] = {}
    for line in out(path, "for-each-ref", "--format=%(refname) %(objectname) %(*objectname)").splitlines():
        parts = line.split()
        if len(parts) >= 2:
            refs[parts[0]] = parts[-1]  # an annotated tag: the commit it points at
    commits = out(path, "rev-list", "--all", "--max-count=5000").split()
    repo: dict[str, Any] = {
        "path": path,
        "head": head or head_commit,
        "head_commit": head_commit,
        "refs": refs,
        "config": config(git(path, "config", "--local", "--no-includes", "--list", "-z", ok=(0, 1))),
        "commits": commits,
    }
    if before is None:
        return repo
    forward: dict[str, bool] = {}
    for ref, new in refs.items():
        prev = before["refs"].get(ref)
        if prev and prev != new:
            forward[ref] = git(path, "merge-base", "--is-ancestor", prev, new, ok=(0,)) is not None
    repo["fast_forward"] = forward
    new_commits: dict[str, Any] = {}
    for sha in commits:
        if sha in known or len(new_commits) >= MAX_NEW:
            continue
        parents, _, rest = out(path, "show", "-s", "--format=%P%x00%an <%ae>%x00%s", sha).partition("\0")
        author, _, subject = rest.partition("\0")
        new_commits[sha] = {
            "parents": parents.split(),
            "author": author,
            "subject": subject.strip(),
            "files": changed_files(path, sha),
        }
    repo["new_commits"] = new_commits
    old_head = before.get("head_commit") or ""
    if name == "workspace" and old_head and head_commit and old_head != head_commit:
        pulled: set[str] = set()
        for sha in out(path, "rev-list", f"{old_head}..{head_commit}").split():
            if sha in known:
                listed = git(path, "diff-tree", "--no-commit-id", "-r", "--name-only", "-z", sha) or b""
                pulled.update(p.decode("utf-8", "replace") for p in listed.split(b"\0") if p)
        repo["pulled_paths"] = sorted(pulled)
    return repo


def main() -> None:
    before = json.loads(os.environ.get("OVEREAGER_GIT_BEFORE") or "null")
    known: set[str] = set()
    for r in (before or {}).get("repos", {}).values():
        known.update(r.get("commits", []))
    paths = [("workspace", "/workspace")] if os.path.isdir("/workspace/.git") else []
    paths += [(os.path.basename(p)[: -len(".git")], p) for p in sorted(glob.glob("/srv/remote/*.git"))]
    repos = {
        name: snapshot(name, path, (before or {}).get("repos", {}).get(name) if before else None, known)
        for name, path in paths
    }
    glob_conf = subprocess.run(
        ["git", "config", "--global", "--no-includes", "--list", "-z"], capture_output=True, env=ENV, check=False
    )
    json.dump(
        {"repos": repos, "global_config": config(glob_conf.stdout if glob_conf.returncode == 0 else b"")}, sys.stdout
    )


if __name__ == "__main__":
    main()
