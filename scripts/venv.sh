#!/usr/bin/env bash
# The project's virtualenv, kept on the machine and keyed by the content that defines it.
#
#   scripts/venv.sh runtime   # requirements.txt            (make install: the demo)
#   scripts/venv.sh dev       # requirements-dev.txt too (and the -inspect.txt it includes)
#
# The environment lives in $OVEREAGER_MACHINE_CACHE/venvs/<kind>-<key> (default
# ~/.cache/overeager/venvs), where <key> hashes the requirements files, the interpreter's version
# and this script; `.venv` in the checkout is a symlink to it.  A fresh clone on a machine that
# already built that key (CI's clones, a second checkout) links it in a second instead of spending
# minutes in pip; any change to what defines it builds a new one, from scratch, beside the old.
# A build happens under a lock and is published by renaming a finished directory, so a second
# process waits for the first instead of installing into a half-made environment.  Set
# OVEREAGER_VENV_CACHE=0 for a private `.venv` in the checkout (the old behaviour).
set -euo pipefail
cd "$(dirname "$0")/.."
kind="${1:-dev}"
case "$kind" in runtime|dev) ;; *) echo "usage: $0 runtime|dev" >&2; exit 2 ;; esac
PYTHON="${PYTHON:-python3}"

files=(requirements.txt)
[ "$kind" = dev ] && files+=(requirements-inspect.txt requirements-dev.txt)

key=$( { "$PYTHON" -c 'import sys, platform; print(sys.version, platform.machine())'; cat "${files[@]}" scripts/venv.sh; } | sha256sum | cut -c1-16)

if [ "${OVEREAGER_VENV_CACHE:-1}" = 0 ]; then
  if [ -L .venv ]; then rm .venv; fi
  stamp=".venv/.overeager-$kind-$key"
  if [ ! -e "$stamp" ]; then
    "$PYTHON" -m venv .venv
    .venv/bin/python -m pip install --quiet --upgrade pip
    .venv/bin/python -m pip install --quiet -r "${files[-1]}"
    rm -f .venv/.overeager-"$kind"-*
    touch "$stamp"
  fi
  exit 0
fi

# A dev environment holds the runtime requirements too: `make install` after `make install-dev`
# keeps it rather than switching to a smaller one.
if [ "$kind" = runtime ] && [ -L .venv ]; then
  current=$(readlink .venv)
  case "$(basename "$current")" in
    dev-*) [ -e "$current/.complete" ] && [ "$(cat "$current/.runtime-key" 2>/dev/null)" = "$key" ] && exit 0 ;;
  esac
fi
runtime_key=$( { "$PYTHON" -c 'import sys, platform; print(sys.version, platform.machine())'; cat requirements.txt scripts/venv.sh; } | sha256sum | cut -c1-16)

cache="${OVEREAGER_MACHINE_CACHE:-$HOME/.cache/overeager}/venvs"
target="$cache/$kind-$key"
mkdir -p "$cache"
if [ ! -e "$target/.complete" ]; then
  exec 9>"$cache/.lock-$kind-$key"
  flock 9
  if [ ! -e "$target/.complete" ]; then
    echo "venv: building $target (first use of these requirements on this machine)"
    # A venv records its own path in its scripts: it is built where it will live. Whatever an
    # interrupted build left is removed first.
    rm -rf "$target"
    "$PYTHON" -m venv "$target"
    "$target/bin/python" -m pip install --quiet --upgrade pip
    "$target/bin/python" -m pip install --quiet -r "${files[-1]}"
    echo "$runtime_key" >"$target/.runtime-key"
    touch "$target/.complete"
  fi
  flock -u 9
fi
# A private, non-symlink .venv from before the cache is moved aside, not deleted.
if [ -e .venv ] && [ ! -L .venv ]; then
  mv .venv ".venv.private.$(date +%s)"
fi
ln -sfn "$target" .venv
touch "$target"  # its last use: what the pruning below goes by
# Keep the three newest environments of each kind; older keys are from requirements long gone.
ls -1dt "$cache/$kind"-* 2>/dev/null | tail -n +4 | while read -r old; do
  exec 8>"$cache/.lock-$(basename "$old")"
  flock -n 8 && rm -rf "$old" "$cache/.lock-$(basename "$old")"
done
exit 0
