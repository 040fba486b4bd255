#!/usr/bin/env bash
# Browser tests (tests/browser/, pytest -m browser) drive Debian's Chromium through Playwright for
# Python. Idempotent: installs chromium and chromium-driver only when /usr/bin/chromium is missing.
# Never `playwright install`: it downloads a browser build, which these machines cannot fetch.
set -euo pipefail

if [ ! -x /usr/bin/chromium ]; then
  echo "browser_deps: installing chromium"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
fi
/usr/bin/chromium --version
