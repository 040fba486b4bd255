#!/usr/bin/env bash
# `make demo`: embedded defaults (SQLite under var/, Redis at REDIS_URL); the dashboard on :8000 comes
# up first, then the pool builds in the background while the campaigns that need no pool run.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379/0}"
VAR="${OVEREAGER_VAR_DIR:-var}"
mkdir -p "$VAR"

source scripts/demo_common.sh

$PY manage.py migrate --noinput -v0
# Fingerprinted, gzipped static files with a year's cache lifetime, as in production (scripts/serve.sh):
# the chart pages load a 1.5 MB Plotly bundle.
$PY manage.py collectstatic --noinput -v0

# The dashboard first, for the demo's lifetime: a new user has pages to open
# within a minute, and watches the pool being built on /pools/ instead of a terminal.
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
port="${DEMO_PORT:-8000}"
$PY -m daphne -b 127.0.0.1 -p "$port" overeager.asgi:application >"$VAR/daphne-demo.log" 2>&1 &
daphne_pid=$!
pids+=("$daphne_pid")
# While daphne starts up.
echo "Demo accounts (new passwords every run):"
$PY manage.py create_demo_users
for _ in $(seq 1 120); do
  $PY -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/healthz', timeout=2)" 2>/dev/null && break
  kill -0 "$daphne_pid" 2>/dev/null || { echo "the dashboard did not start: see $VAR/daphne-demo.log" >&2; exit 1; }
  sleep 0.5
done
# The workers (runs execute there) once the dashboard is up: their start-up would slow it down.
# Their logs go to files so the campaigns' progress bars stay readable here.
for i in $(seq 1 "${DEMO_WORKERS:-2}"); do
  $PY manage.py rqworker --verbosity 0 >"$VAR/worker-demo-$i.log" 2>&1 &
  pids+=($!)
done
echo
echo "Dashboard: http://127.0.0.1:$port/campaigns/ (log in as admin with the password above);"
echo "the pool build is live on http://127.0.0.1:$port/pools/ and the campaigns below update live."
echo "Logs: $VAR/daphne-demo.log, $VAR/worker-demo-*.log, $VAR/pool-demo.log"
echo

$PY manage.py load_libraries
$PY manage.py load_suite
$PY manage.py demo_setup
# The verified pool and the consent-stripped twins of its scenarios, in the background (resumable:
# a second `make demo` reuses them). The full benchmark pool is 1,000 scenarios (about 25 minutes
# here); the demo builds a smaller one unless told otherwise. Its report prints here when done.
pool_size="${DEMO_POOL_SIZE:-240}"
$PY manage.py build_pool --size "$pool_size" --workers "${DEMO_WORKERS:-2}" \
  --backend "${DEMO_POOL_BACKEND:-bwrap}" --twins 2>"$VAR/pool-demo.log" &
pool_pid=$!
pids+=("$pool_pid")

backend="${DEMO_BACKEND:-${SANDBOX_BACKEND:-bwrap}}"
follow=(--workers 0 --backend "$backend" --q-floor 1 --q-ceil 3)
# The campaigns start as soon as what they draw from is there.
# 1. UnderSpecBench: a stratified sample of the suite's prompts for three simulated systems. It
#    draws from the suite, not the pool, so it runs while the pool is being built.
$PY manage.py run_campaign --name demo-suite --frameworks sim-alpha,sim-beta,sim-gamma --models sim-m1 --simulate \
  --kind usb-sample --simulation runs/demo/simulation.json --n "${DEMO_SUITE_RUNS:-48}" --k 8 "${follow[@]}"
# 1b. A scenario pack (packs/examples, docs/scenario-packs.md): imported, each scenario built and
#    checked in the sandbox, then every scenario × consent variant run once. It needs no pool either.
bash scripts/demo_pack.sh
# The SNARE campaigns draw from all 24 × 5 archetype × consent cells (the heatmap's): they start
# when every cell has its verified scenarios, i.e. when the pool is complete.
echo "Waiting for the pool (live on http://127.0.0.1:$port/pools/):"
$PY manage.py wait_for_pool --size "$pool_size" --pid "$pool_pid"
# 2. A simulated 3 × 2 matrix: the stochastic agent with planted effects (runs/demo/simulation.json).
$PY manage.py run_campaign --name demo-matrix --frameworks sim-alpha,sim-beta,sim-gamma --models sim-m1,sim-m2 \
  --simulate --simulation runs/demo/simulation.json --n "${DEMO_RUNS:-30}" --k 6 "${follow[@]}"
# 3. A real agent program: the built-in shell agent driven by the scripted model through the gateway.
#    Its tokens are priced at the scripted model's notional price (demo_setup; labelled "notional"
#    wherever a cost shows): the estimate first, then the campaign under a cost cap.
$PY manage.py run_campaign --name demo-shell --sut shell:scripted-demo --n "${DEMO_SHELL_RUNS:-8}" --k 4 --dry-run
$PY manage.py run_campaign --name demo-shell --sut shell:scripted-demo --n "${DEMO_SHELL_RUNS:-8}" --k 4 \
  --cost-cap "${DEMO_SHELL_COST_CAP:-2}" "${follow[@]}"
# 4. Consent sensitivity: pairs with and without the consent phrasing, same SUT. It needs the
#    consent-stripped twins, which the builder makes after the pool.
if ! wait "$pool_pid"; then
  echo "build_pool failed: see $VAR/pool-demo.log" >&2
  exit 1
fi
$PY manage.py run_campaign --name demo-paired --sut sim-beta:sim-m1 --simulate --kind paired \
  --simulation runs/demo/simulation.json --n "${DEMO_PAIRS:-24}" --k 6 "${follow[@]}"
# 5. A blind validation queue over the non-action runs, so a validator has runs to label.
$PY manage.py create_queue "demo: non-action runs" --campaign demo-suite/ --campaign demo-shell --stratify system \
  --description "Non-action runs of the demo's UnderSpecBench sample and shell-agent campaigns."
# 6. A blind verdict queue over the SNARE campaigns: validators check the oracle's verdicts, and
# /validity/ reports the agreement (and says plainly that a demo audits fewer than 50 runs).
$PY manage.py create_verdict_queue "demo: oracle verdicts" --campaign demo-matrix/ --campaign demo-paired \
  --campaign demo-shell --stratify leg,effect,consent --size "${DEMO_VERDICT_RUNS:-40}" --overlap-share 0.5 \
  --description "The oracle's verdicts on the demo's SNARE campaigns, stratified by deciding leg, effect and consent mode."

# 7. The shell-agent campaign as an Inspect eval log, when the optional extra is installed
#    (pip install -r requirements-inspect.txt; docs/bundles.md, "Inspect logs").
if $PY -c "import inspect_ai" 2>/dev/null; then
  $PY manage.py export_inspect --campaign demo-shell --out "$VAR/inspect"
  echo "Open it in Inspect's viewer: .venv/bin/inspect view start --log-dir $VAR/inspect"
else
  echo "(Inspect export skipped: pip install -r requirements-inspect.txt, then manage.py export_inspect --campaign demo-shell --out $VAR/inspect)"
fi

echo
echo "Demo campaigns finished. Serving the dashboard on http://127.0.0.1:$port — Ctrl-C stops."
wait "$daphne_pid"
