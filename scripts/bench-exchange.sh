#!/usr/bin/env bash
# make bench-exchange: offers turned into escrowed contracts per second and
# their negotiation latency (p50, p99), with the in-memory ledger and with
# PostgreSQL, beside natscli's `nats bench service` request/reply on the
# same nats-server in the same run. Run under scripts/pg.sh and
# scripts/nats-server.sh (make bench-exchange does), which set
# BOURSE_TEST_DATABASE_URL and NATS_URL.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${NATS_URL:?run me under scripts/nats-server.sh (make bench-exchange does)}"
N="${BENCH_OFFERS:-20000}"
nats="$(bash scripts/natscli.sh)"
tmp="$(mktemp -d)"
serve_pid=""
trap '[ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null; rm -rf "$tmp"' EXIT

echo "bench-exchange: $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, NATS at $NATS_URL, ${BOURSE_PG_SETTINGS:-no PostgreSQL}"
go test -c -o "$tmp/market.test" ./market

"$nats" -s "$NATS_URL" bench service serve --clients 1 bourse.bench.raw --no-progress >"$tmp/serve.log" 2>&1 &
serve_pid=$!
sleep 0.5

raw() { # raw CLIENTS → "msgs/s avg-µs"
  "$nats" -s "$NATS_URL" bench service request --clients "$1" --msgs "$N" --no-progress bourse.bench.raw >"$tmp/raw.$1" 2>&1
  awk '
    function us(v) { if (v ~ /ms$/) { sub("ms", "", v); return v * 1000 } sub("us", "", v); return v }
    function before(w,   i) { for (i = 2; i <= NF; i++) if ($i == w) { v = $(i-1); gsub(",", "", v); return v } }
    /service requester stats:/ { rate = before("msgs/sec"); lat = us($NF) }
    /aggregated stats:/ { rate = before("msgs/sec") }
    /avg latencies/ { for (i = 1; i <= NF; i++) if ($i == "avg") lat = us($(i+1)) }
    END { printf "%s %s\n", rate, lat }' "$tmp/raw.$1"
}

# ticks PID: the CPU time, in clock ticks, of process PID, its live
# children (PostgreSQL's backends) and its children reaped (those that
# exited); 0 without PID.
ticks() {
  local t=0 c
  [ -n "${1:-}" ] && [ -r "/proc/$1/stat" ] || { echo 0; return; }
  t=$(awk '{ print $14 + $15 + $16 + $17 }' "/proc/$1/stat")
  for c in $(pgrep -P "$1"); do
    t=$((t + $(awk '{ print $14 + $15 }' "/proc/$c/stat" 2>/dev/null || echo 0)))
  done
  echo "$t"
}
hz=$(getconf CLK_TCK)

ours() { # ours STORE CLIENTS → "contracts/s p50 p99 cpu-µs/contract: ours nats-server postgres"
  local TIMEFORMAT='%3U %3S' n0 n1 g0 g1
  n0=$(ticks "${NATS_SERVER_PID:-}") g0=$(ticks "${PG_POSTMASTER_PID:-}")
  { time GOGC="${GOGC:-400}" BOURSE_BENCH_NATS_URL="$NATS_URL" BOURSE_BENCH_STORE="$1" "$tmp/market.test" -test.run '^$' \
    -test.bench "BenchmarkOffers/clients=$2\$" -test.benchtime "${N}x" >"$tmp/ours.$1.$2" 2>&1; } 2>"$tmp/cpu.$1.$2" ||
    { cat "$tmp/ours.$1.$2" >&2; exit 1; }
  sleep 0.5 # the pool's backends exit and are reaped
  n1=$(ticks "${NATS_SERVER_PID:-}") g1=$(ticks "${PG_POSTMASTER_PID:-}")
  [ "$1" = sql ] || g1=$g0 # a PostgreSQL the in-memory store does not use
  awk -v n="$N" -v hz="$hz" -v nats=$((n1 - n0)) -v pg=$((g1 - g0)) -v cpu="$(cat "$tmp/cpu.$1.$2")" '
    /contracts\/s/ { for (i = 1; i < NF; i++) { if ($(i+1) == "contracts/s") c = $i; if ($(i+1) == "p50-µs") p = $i; if ($(i+1) == "p99-µs") q = $i } }
    END { split(cpu, u, " "); printf "%s %s %s %.0f %.0f %.0f\n", c, p, q, (u[1] + u[2]) * 1e6 / n, nats * 1e6 / hz / n, pg * 1e6 / hz / n }' "$tmp/ours.$1.$2"
}

stores="mem"
[ -n "${BOURSE_TEST_DATABASE_URL:-}" ] && stores="mem sql"
printf '\n%-6s %-8s %12s %8s %8s %10s %10s %8s %9s   %s\n' store clients "contracts/s" "p50 µs" "p99 µs" "raw req/s" "raw avg µs" "p50/raw" "rate/raw" \
  "CPU µs/contract: ours nats-server postgres"
for c in 1 16; do
  read -r rrate rlat <<<"$(raw "$c")"
  for s in $stores; do
    read -r crate p50 p99 cours cnats cpg <<<"$(ours "$s" "$c")"
    awk -v s="$s" -v c="$c" -v cr="$crate" -v p="$p50" -v q="$p99" -v rr="$rrate" -v rl="$rlat" -v a="$cours" -v b="$cnats" -v g="$cpg" \
      'BEGIN { printf "%-6s %-8s %12.0f %8.0f %8.0f %10.0f %10.0f %8.2f %9.3f   %20d %11d %8d\n", s, c, cr, p, q, rr, rl, p / rl, cr / rr, a, b, g }'
  done
done
echo
echo "CPU: each process's user and system time over the run, divided by the contracts made; ours is the whole benchmark process (clients, agents and exchange), nats-server and postgres include the run's setup (a fresh database, migrations)"
echo "ours: go test -bench BenchmarkOffers ./market with GOGC=${GOGC:-400} (as bourse exchange sets it): bidder.Client offers, 2 server agents (64 GPUs each, jobs of 1 ms), exchange on the store"
echo "raw: nats bench service request (natscli v0.3.0) against nats bench service serve, 128 B, same nats-server"
