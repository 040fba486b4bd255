"""Smoke run: mini-swe-agent × the local model, on a few pool scenarios, in the Docker sandbox.

A real model (Qwen2.5-Coder-1.5B-Instruct Q4_K_M on llama.cpp, docs/local-model.md) drives a
real agent CLI end to end without any network: model server on the host's loopback → gateway
process (``http`` upstream, no key) → Unix socket → in-sandbox forwarder → mini-swe-agent in
its image layer → commands in the sandbox → oracle.  Not a test and not in CI: the model is
weak and slow (≈ 25 tokens/s on two idle cores), and what it does differs from run to run.

    make local-model                               # once: llama-cpp-python + the verified weights
    .venv/bin/python bench/local_model_smoke.py [--scenarios 3] [--max-steps 6] [--wall 900]

Uses a model server already answering on ``--port``, or starts one (and stops it at the end).
mini-swe-agent gets a named ``tool_choice`` (always call ``bash``: with ``auto`` the 1.5B model
answers in prose, which the CLI rejects as a format error) and ``max_tokens`` 512.  Prints, per run: the scenario, its
validity (and why), the verdict, the model requests, tokens, duration, and the agent's commands.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.agents.cli.mini_swe_agent import MiniSweAgentAdapter  # noqa: E402
from harness.agents.events import Command  # noqa: E402
from harness.agents.runner import gateway_process  # noqa: E402
from harness.gateway import local_model  # noqa: E402
from harness.gateway.registry import Budgets, UpstreamConfig  # noqa: E402
from harness.sandbox.images import agents as agent_images  # noqa: E402
from pool.execution import run_agent  # noqa: E402
from pool.libschema import read_library  # noqa: E402
from pool.materialize import MaterializeError, materialize  # noqa: E402

# (archetype, consent mode): three different traps; the first skeleton × seed that materializes.
WANTED = [
    ("credential-hoarding", "explicit-deny"),
    ("destructive-delete", "explicit-deny"),
    ("test-tampering", "explicit-deny"),
]
# Always call bash (a named tool_choice: llama.cpp constrains the reply by grammar), and at most
# 512 tokens per reply: a grammar-constrained string argument has no natural end, and at a few
# tokens per second an unbounded one holds a run for many minutes.
SMALL_MODEL_KWARGS = {"tool_choice": {"type": "function", "function": {"name": "bash"}}, "max_tokens": 512}


def pick_scenarios(count: int, pool_seed: int) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    library = read_library(ROOT / "pool" / "libraries")
    archetypes = {a["id"]: a for a in library.archetypes}
    consent = {m["id"]: m for m in library.consent}
    picked = []
    for arch_id, mode_id in WANTED[:count]:
        for skeleton in sorted(library.skeletons, key=lambda s: s["id"]):
            found = None
            for seed in sorted(library.seeds, key=lambda s: s["id"]):
                try:
                    found = (
                        materialize(archetypes[arch_id], consent[mode_id], skeleton, seed, pool_seed=pool_seed),
                        seed,
                    )
                except MaterializeError:
                    continue
                break
            if found:
                picked.append(found)
                break
    return picked


def answering(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2) as resp:
            return resp.status == 200
    except OSError:
        return False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenarios", type=int, default=3)
    parser.add_argument("--max-steps", type=int, default=6)
    parser.add_argument("--wall", type=float, default=900.0, help="wall-time limit per run, seconds")
    parser.add_argument("--port", type=int, default=local_model.DEFAULT_PORT)
    parser.add_argument("--pool-seed", type=int, default=11)
    args = parser.parse_args()

    paths = local_model.Paths(local_model.DEFAULT_DIR)
    if not local_model.verified(paths) or local_model.installed_server_version() is None:
        print("the local model is not set up: run `make local-model` first", file=sys.stderr)
        return 2
    started_server: subprocess.Popen[bytes] | None = None
    log = None
    if not answering(args.port):
        print(f"starting the model server on 127.0.0.1:{args.port} …", flush=True)
        log = open(local_model.DEFAULT_DIR / "server.log", "ab")
        started_server = subprocess.Popen(
            [sys.executable, "-m", "harness.gateway.local_model", "serve", "--port", str(args.port)],
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 120
        while not answering(args.port):
            if started_server.poll() is not None or time.monotonic() > deadline:
                print(f"the model server did not come up; see {local_model.DEFAULT_DIR}/server.log", file=sys.stderr)
                return 1
            time.sleep(1)
    tag = agent_images.build_layer("mini-swe-agent", progress=lambda _: None).tag
    upstream = UpstreamConfig(
        kind="http", base_url=local_model.base_url(port=args.port), model=local_model.MODEL_NAME, key_env=""
    )
    sut = {
        "framework": "mini-swe-agent",
        "model": local_model.MODEL_NAME,
        "api_kind": "openai-chat",
        "upstream": upstream,
    }
    adapter = MiniSweAgentAdapter(model_kwargs=SMALL_MODEL_KWARGS)
    redis_url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
    prefix = f"bench:local-model:{uuid.uuid4().hex}:"
    print(f"mini-swe-agent {adapter.version()} ({tag}) × {local_model.MODEL_NAME} via {upstream.base_url}", flush=True)
    failures = 0
    try:
        with gateway_process(redis_url, prefix) as gateway:
            for n, (scenario, seed) in enumerate(pick_scenarios(args.scenarios, args.pool_seed), start=1):
                name = f"{scenario['archetype']} × {scenario['skeleton']} × {scenario['seed']} ({scenario['consent']})"
                evidence = Path(tempfile.mkdtemp(prefix=f"local-model-smoke-{n}-", dir=local_model.DEFAULT_DIR))
                t0 = time.monotonic()
                try:
                    run = run_agent(
                        scenario,
                        seed,
                        sut,
                        backend="docker",
                        run_id=f"local-model-smoke-{n}",
                        evidence_dir=evidence,
                        gateway=gateway,
                        adapter=adapter,
                        wall_limit=args.wall,
                        max_steps=args.max_steps,
                        budgets=Budgets(max_requests=args.max_steps + 5, max_seconds=args.wall),
                    )
                except Exception as exc:  # a smoke run reports and goes on
                    failures += 1
                    print(f"[{n}] {name}: harness error {type(exc).__name__}: {exc}", flush=True)
                    continue
                verdict = run.verdict.reason() if run.verdict is not None else "none (run not valid)"
                # The transcript's commands, or (if the runner passed the adapter no trajectory)
                # the sandbox trace's: mini-swe-agent runs each command as `/bin/sh -c CMD`.
                agent_commands = [e.command for e in run.events if isinstance(e, Command)] or [
                    argv[2] for argv in map(shlex.split, run.commands) if argv[:2] == ["/bin/sh", "-c"]
                ]
                print(
                    f"[{n}] {name}\n"
                    f"    validity: {run.validity}{' — ' + run.validity_reason if run.validity_reason else ''}\n"
                    f"    verdict:  {'OVEREAGER' if run.verdict and run.verdict.overeager else 'ok'}: {verdict}\n"
                    f"    requests: {run.usage.get('requests')}, tokens in/out: {run.usage.get('input_tokens')}"
                    f"/{run.usage.get('output_tokens')}, exit {run.exit_code}, {run.duration:.0f} s"
                    f" (wall {time.monotonic() - t0:.0f} s), task checks passed: {run.task_succeeded}\n"
                    f"    commands: {agent_commands[:8]}\n"
                    f"    evidence: {evidence}",
                    flush=True,
                )
    finally:
        if started_server is not None:
            started_server.terminate()
            started_server.wait(30)
        if log is not None:
            log.close()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
