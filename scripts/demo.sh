#!/usr/bin/env bash
# `make demo`: embedded defaults (SQLite under var/, Redis at REDIS_URL), then serve on :8000.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379/0}"
mkdir -p var

started_redis=""
redis_port=$(python3 -c "import urllib.parse,os; print(urllib.parse.urlsplit(os.environ['REDIS_URL']).port or 6379)")
if ! $PY -c "import redis,os; redis.Redis.from_url(os.environ['REDIS_URL']).ping()" 2>/dev/null; then
  if command -v redis-server >/dev/null; then
    echo "No Redis answers at $REDIS_URL: starting a private redis-server on port $redis_port (stopped on exit)."
    redis-server --daemonize yes --bind 127.0.0.1 --port "$redis_port" --save "" --appendonly no \
      --dir "$PWD/var" --logfile "$PWD/var/redis-demo.log" --pidfile "$PWD/var/redis-demo.pid"
    started_redis=1
    for _ in $(seq 1 20); do $PY -c "import redis,os; redis.Redis.from_url(os.environ['REDIS_URL']).ping()" 2>/dev/null && break; sleep 0.25; done
  else
    echo "No Redis answers at $REDIS_URL and redis-server is not installed." >&2
    echo "Install it (Debian/Ubuntu: sudo apt-get install redis-server) or set REDIS_URL to a running Redis." >&2
    exit 1
  fi
fi
cleanup() {
  if [ -n "$started_redis" ] && [ -f var/redis-demo.pid ]; then
    kill "$(cat var/redis-demo.pid)" 2>/dev/null || true
    echo "stopped the demo redis-server"
  fi
}
trap cleanup EXIT

# The pool's reference solutions run in the bubblewrap sandbox, traced with strace.
for tool in bwrap strace git; do
  if ! command -v "$tool" >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      echo "installing bubblewrap, strace and git (needed by the sandbox)"
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap strace git >/dev/null
      break
    fi
    echo "$tool is missing. Install it (Debian/Ubuntu: sudo apt-get install bubblewrap strace git) and run make demo again." >&2
    exit 1
  fi
done

$PY manage.py migrate --noinput -v0
echo "Demo accounts (new passwords every run):"
$PY manage.py create_demo_users
$PY manage.py load_libraries
$PY manage.py load_suite
# The verified pool and the consent-stripped twins of its scenarios (resumable: a second
# `make demo` reuses them). The full benchmark pool is 1,000 scenarios (about 25 minutes here);
# the demo builds a smaller one unless told otherwise.
$PY manage.py build_pool --size "${DEMO_POOL_SIZE:-240}" --workers "${DEMO_WORKERS:-2}" \
  --backend "${DEMO_POOL_BACKEND:-bwrap}" --twins
$PY manage.py demo_setup

# Workers (runs execute here) and the dashboard, in the background for the demo's lifetime.
pids=()
stop_all() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  cleanup
}
trap stop_all EXIT
# Ctrl-C: background jobs of a script ignore SIGINT (daphne keeps that), and bash would wait for
# them; trapping it makes `wait` return and the EXIT trap stop everything with SIGTERM.
trap 'exit 130' INT TERM
# Their logs go to files so the campaigns' progress bars stay readable here.
for i in $(seq 1 "${DEMO_WORKERS:-2}"); do
  $PY manage.py rqworker --verbosity 0 >"var/worker-demo-$i.log" 2>&1 &
  pids+=($!)
done
$PY -m daphne -b 127.0.0.1 -p "${DEMO_PORT:-8000}" overeager.asgi:application >var/daphne-demo.log 2>&1 &
pids+=($!)
echo
echo "Dashboard: http://127.0.0.1:${DEMO_PORT:-8000}/campaigns/ (log in as admin with the password above);"
echo "the campaigns below update there live while they run. Worker logs: var/worker-demo-*.log"
echo

backend="${DEMO_BACKEND:-${SANDBOX_BACKEND:-bwrap}}"
follow=(--workers 0 --backend "$backend" --q-floor 1 --q-ceil 3)
# 1. A simulated 3 × 2 matrix: the stochastic agent with planted effects (runs/demo/simulation.json).
$PY manage.py run_campaign --name demo-matrix --frameworks sim-alpha,sim-beta,sim-gamma --models sim-m1,sim-m2 \
  --simulate --simulation runs/demo/simulation.json --n "${DEMO_RUNS:-30}" --k 6 "${follow[@]}"
# 2. Consent sensitivity: pairs with and without the consent phrasing, same SUT.
$PY manage.py run_campaign --name demo-paired --sut sim-beta:sim-m1 --simulate --kind paired \
  --simulation runs/demo/simulation.json --n "${DEMO_PAIRS:-24}" --k 6 "${follow[@]}"
# 3. UnderSpecBench: a stratified sample of the suite's prompts for three simulated systems.
$PY manage.py run_campaign --name demo-suite --frameworks sim-alpha,sim-beta,sim-gamma --models sim-m1 --simulate \
  --kind usb-sample --simulation runs/demo/simulation.json --n "${DEMO_SUITE_RUNS:-48}" --k 8 "${follow[@]}"
# 4. A real agent program: the built-in shell agent driven by the scripted model through the gateway.
$PY manage.py run_campaign --name demo-shell --sut shell:scripted-demo --n "${DEMO_SHELL_RUNS:-8}" --k 4 "${follow[@]}"
# 5. A blind validation queue over the non-action runs, so a validator has runs to label.
$PY manage.py create_queue "demo: non-action runs" --campaign demo-suite/ --campaign demo-shell --stratify system \
  --description "Non-action runs of the demo's UnderSpecBench sample and shell-agent campaigns."
# 6. A blind verdict queue over the SNARE campaigns: validators check the oracle's verdicts, and
# /validity/ reports the agreement (and says plainly that a demo audits fewer than 50 runs).
$PY manage.py create_verdict_queue "demo: oracle verdicts" --campaign demo-matrix/ --campaign demo-paired \
  --campaign demo-shell --stratify leg,effect,consent --size "${DEMO_VERDICT_RUNS:-40}" --overlap-share 0.5 \
  --description "The oracle's verdicts on the demo's SNARE campaigns, stratified by deciding leg, effect and consent mode."

echo
echo "Demo campaigns finished. Serving the dashboard on http://127.0.0.1:${DEMO_PORT:-8000} — Ctrl-C stops."
wait "${pids[-1]}"
