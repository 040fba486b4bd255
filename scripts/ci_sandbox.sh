#!/usr/bin/env bash
# Sandbox prerequisites for CI and fresh machines, idempotent: install the Docker engine,
# bubblewrap, debootstrap and strace if missing; start dockerd if it does not answer; build the
# base image if no image with the current inputs' tag exists (kept across runs on one machine).
set -euo pipefail
cd "$(dirname "$0")/.."

PY=.venv/bin/python
[ -x "$PY" ] || PY=python3

missing=()
command -v dockerd >/dev/null || missing+=(docker.io)
command -v bwrap >/dev/null || missing+=(bubblewrap)
command -v debootstrap >/dev/null || missing+=(debootstrap)
command -v strace >/dev/null || missing+=(strace)
if [ ${#missing[@]} -gt 0 ]; then
  echo "ci_sandbox: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! docker info >/dev/null 2>&1; then
  echo "ci_sandbox: starting dockerd"
  # setsid: a dockerd started from a shell that later exits dies with it (seen mid-campaign).
  setsid dockerd >/var/log/dockerd.log 2>&1 </dev/null &
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && break
    sleep 1
  done
  docker info >/dev/null 2>&1 || { echo "ci_sandbox: dockerd did not come up; see /var/log/dockerd.log" >&2; exit 1; }
fi

# The image module is Django-free; it prints "<tag> <image id>" and skips the build when the
# content-hashed tag already exists.
"$PY" -m harness.sandbox.images

# Agent image layers FROM the base image, the ones tests/agents need (npm/PyPI at build time via
# `docker build --network host`; each ~30 s when missing, skipped when its content-hashed tag
# exists).  The module prints each layer's tag, id and how long it took.
# SANDBOX_AGENT_LAYERS (space-separated) builds fewer: make real-demo needs mini-swe-agent only.
read -r -a AGENT_LAYERS <<<"${SANDBOX_AGENT_LAYERS:-claude-code opencode codex gemini-cli mini-swe-agent aider openhands}"
"$PY" -m harness.sandbox.images.agents "${AGENT_LAYERS[@]}"

# Sandboxes orphaned by an earlier, interrupted run of the suite.
"$PY" - <<'PYEOF'
from harness.sandbox import reaper
r = reaper.reap()
print(f"ci_sandbox: reaped {r.removed} leftover sandbox(es)")
PYEOF
