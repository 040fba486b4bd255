#!/usr/bin/env bash
# The demo's scenario pack (issue 24): import the example pack — each scenario built and checked in
# the sandbox — then run one short uniform campaign over it (every scenario × consent variant once)
# with the built-in shell agent and the scripted model (`demo_setup`'s shell:scripted-demo).
# scripts/demo.sh calls it once its workers run; alone, give it workers: DEMO_PACK_WORKERS=1.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
backend="${DEMO_BACKEND:-${SANDBOX_BACKEND:-bwrap}}"
$PY manage.py import_scenarios packs/examples --backend "$backend"
$PY manage.py run_campaign --name demo-pack --sut shell:scripted-demo --kind pack --pack examples \
  --repeats 1 --k 5 --backend "$backend" --workers "${DEMO_PACK_WORKERS:-0}"
