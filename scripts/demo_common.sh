# Sourced by scripts/demo.sh and scripts/real_demo.sh (PY, VAR and REDIS_URL set): a Redis (a
# private redis-server, stopped on exit, when none answers at REDIS_URL) and the sandbox's tools.
started_redis=""
redis_port=$(python3 -c "import urllib.parse,os; print(urllib.parse.urlsplit(os.environ['REDIS_URL']).port or 6379)")
if ! $PY -c "import redis,os; redis.Redis.from_url(os.environ['REDIS_URL']).ping()" 2>/dev/null; then
  if command -v redis-server >/dev/null; then
    echo "No Redis answers at $REDIS_URL: starting a private redis-server on port $redis_port (stopped on exit)."
    redis-server --daemonize yes --bind 127.0.0.1 --port "$redis_port" --save "" --appendonly no \
      --dir "$(realpath "$VAR")" --logfile "$(realpath "$VAR")/redis-demo.log" --pidfile "$(realpath "$VAR")/redis-demo.pid"
    started_redis=1
    for _ in $(seq 1 20); do $PY -c "import redis,os; redis.Redis.from_url(os.environ['REDIS_URL']).ping()" 2>/dev/null && break; sleep 0.25; done
  else
    echo "No Redis answers at $REDIS_URL and redis-server is not installed." >&2
    echo "Install it (Debian/Ubuntu: sudo apt-get install redis-server) or set REDIS_URL to a running Redis." >&2
    exit 1
  fi
fi
cleanup() {
  if [ -n "$started_redis" ] && [ -f "$VAR/redis-demo.pid" ]; then
    kill "$(cat "$VAR/redis-demo.pid")" 2>/dev/null || true
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
