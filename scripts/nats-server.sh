#!/usr/bin/env bash
# A throwaway nats-server (Debian's package) with JetStream, for tests and
# benchmarks that need NATS as a separate process:
#   scripts/nats-server.sh run -- CMD ARGS…
# starts it on a free loopback port with its store in a temporary
# directory, exports NATS_URL, runs CMD, and always stops the server.
set -euo pipefail

find_server() {
  if command -v nats-server >/dev/null 2>&1; then command -v nats-server; return; fi
  [ -x /usr/sbin/nats-server ] && { echo /usr/sbin/nats-server; return; }
  return 1
}

bin="$(find_server || true)"
if [ -z "$bin" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "nats-server.sh: installing Debian's nats-server package" >&2
    bash "$(dirname -- "$0")/apt-install.sh" nats-server >/dev/null
    bin="$(find_server)"
  else
    echo "nats-server.sh: nats-server not found; install it (sudo apt-get install nats-server)" >&2
    exit 1
  fi
fi

[ "${1:-}" = run ] && [ "${2:-}" = -- ] || { echo "usage: $0 run -- CMD [ARGS…]" >&2; exit 2; }
shift 2

dir="$(mktemp -d)"
pid=""
stop() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$dir"
}
trap stop EXIT INT TERM HUP

for _ in $(seq 1 20); do
  port=$(( 32000 + RANDOM % 8000 ))
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && continue
  "$bin" -a 127.0.0.1 -p "$port" -js -sd "$dir/js" >"$dir/log" 2>&1 &
  pid=$!
  for _ in $(seq 1 50); do
    grep -q 'Server is ready' "$dir/log" 2>/dev/null && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if grep -q 'Server is ready' "$dir/log" 2>/dev/null; then break; fi
  kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; pid=""
done
[ -n "$pid" ] || { echo "nats-server.sh: could not start nats-server:" >&2; tail -n 20 "$dir/log" >&2; exit 1; }
export NATS_URL="nats://127.0.0.1:$port"
export NATS_SERVER_PID="$pid" # for benchmarks that weigh its CPU
echo "nats-server.sh: $("$bin" --version) at $NATS_URL" >&2
status=0
"$@" || status=$?
exit "$status"
