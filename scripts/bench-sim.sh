#!/usr/bin/env bash
# make bench-sim: the simulator's speed. A million jobs of
# examples/sim/bench-1m.yaml through the whole market (one run, one
# goroutine: the House, the server nodes, the strategies, the ledger),
# beside the speed of making the same jobs alone (bourse sim gen to
# /dev/null), the ceiling no simulation of that workload can pass; then
# BenchmarkMarket, the cost of one job in the demo's market with
# allocations per job. BENCH_SIM_JOBS runs fewer jobs (e.g. 100000).
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS="${BENCH_SIM_JOBS:-1000000}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

go build -o "$tmp/bourse" ./cmd/bourse
sed "s/^  jobs: .*/  jobs: $JOBS/" examples/sim/bench-1m.yaml >"$tmp/bench.yaml"
echo "bench-sim: $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, $(go version | cut -d' ' -f3), $JOBS jobs"

timed() { # timed NAME CMD… → NAME seconds and peak RSS, from /usr/bin/time's format
  local name="$1"; shift
  /usr/bin/time -f "%e %M" -o "$tmp/$name.time" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" || { cat "$tmp/$name.err"; exit 1; }
}
timed gen "$tmp/bourse" sim gen "$tmp/bench.yaml" --format jsonl -o /dev/null
timed run "$tmp/bourse" sim run "$tmp/bench.yaml" -o "$tmp/report"

read -r gen_s gen_kb <"$tmp/gen.time"
read -r run_s run_kb <"$tmp/run.time"
printf '\n%-34s %10s %12s %10s %8s\n' what seconds jobs/s "peak RSS" ratio
awk -v j="$JOBS" -v gs="$gen_s" -v gk="$gen_kb" -v rs="$run_s" -v rk="$run_kb" 'BEGIN {
  printf "%-34s %10.1f %12.0f %8.0fMB %8s\n", "making the jobs (sim gen)", gs, j / gs, gk / 1024, "1"
  printf "%-34s %10.1f %12.0f %8.0fMB %8.3f\n", "simulating them (sim run)", rs, j / rs, rk / 1024, gs / rs
  printf "%-34s %10s %12.0f\n", "goal: 1M jobs in 60 s", "", 1000000 / 60
}'
echo
grep -E '^(jobs|revenue|utilisation|jobs completed|jobs rejected)' "$tmp/run.out" || true
tail -n2 "$tmp/run.out" | head -n1

echo
go test -run '^$' -bench '^BenchmarkMarket$' -benchtime 20000x -count 1 ./sim/ | grep -E '^Benchmark'
