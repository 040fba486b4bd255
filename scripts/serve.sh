#!/usr/bin/env bash
# Production start (README, "Configuration"): with DEBUG=0, SECRET_KEY, ALLOWED_HOSTS, DATABASE_URL and
# REDIS_URL set, apply migrations, collect the static files (fingerprinted and gzipped, served by
# WhiteNoise with a year's cache lifetime; without them the pages still work, served plainly), then
# run the ASGI server. `scripts/serve.sh --prepare` does the first two steps only.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-.venv/bin/python}"
$PY manage.py migrate --noinput -v0
$PY manage.py collectstatic --noinput -v0
[ "${1:-}" = "--prepare" ] && exit 0
export DB_POOL_MAX_SIZE="${DB_POOL_MAX_SIZE:-10}"
exec $PY -m daphne -b "${HOST:-0.0.0.0}" -p "${PORT:-8000}" overeager.asgi:application
