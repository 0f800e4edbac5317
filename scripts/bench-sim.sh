#!/usr/bin/env bash
# make bench-sim: the simulator's speed, beside a baseline built from
# another commit and run in the same invocation, so that the ratios hold
# on a machine shared with other work (compare CPU seconds there: wall
# seconds wait for the other work too).
#
#  1. A million jobs of examples/sim/bench-1m.yaml through the whole market
#     (one run, one goroutine: the House, the server nodes, the
#     strategies, the ledger), beside the speed of making the same jobs
#     alone (bourse sim gen to /dev/null), the ceiling no simulation of
#     that workload can pass; the baseline's run of the same; and a run of
#     a tenth of the jobs, to see that memory holds what is live.
#  2. examples/sim/bench-cluster.yaml, a synthetic cluster of the shape of
#     Alibaba's GPU trace (1,213 servers, 149 days): the baseline and this
#     commit on its first BENCH_SIM_CLUSTER_DAYS days (10), then this
#     commit on all of it, once with its adaptive bidders (every server
#     asked and countering) and once with fixed ones (the first server
#     asked accepts).
#  3. BenchmarkMarket, the cost of one job in the demo's market.
#
# BENCH_SIM_BASE is the baseline's commit (default 5c903a1, the simulator
# before issue 25's cost work); BENCH_SIM_JOBS runs fewer jobs in 1.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS="${BENCH_SIM_JOBS:-1000000}"
BASE="${BENCH_SIM_BASE:-5c903a1}"
DAYS="${BENCH_SIM_CLUSTER_DAYS:-10}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

go build -o "$tmp/bourse" ./cmd/bourse
mkdir "$tmp/base"
git archive "$BASE" | tar -x -C "$tmp/base"
(cd "$tmp/base" && go build -o "$tmp/bourse-base" ./cmd/bourse)
echo "bench-sim: $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, $(go version | cut -d' ' -f3), $JOBS jobs; this commit $(git rev-parse --short HEAD), baseline $(git rev-parse --short "$BASE")"

sed "s/^  jobs: .*/  jobs: $JOBS/" examples/sim/bench-1m.yaml >"$tmp/bench.yaml"
sed "s/^  jobs: .*/  jobs: $((JOBS / 10))/" examples/sim/bench-1m.yaml >"$tmp/bench-tenth.yaml"
{ sed "s/^  horizon: .*/  horizon: $((DAYS * 24))h/" examples/sim/bench-cluster.yaml; echo "limit: $((DAYS * 24))h"; } >"$tmp/cluster-cut.yaml"
sed 's/^  strategy: adaptive/  strategy: fixed/' examples/sim/bench-cluster.yaml >"$tmp/cluster-fixed.yaml"

# timed NAME CMD… → NAME's wall seconds, CPU seconds and peak RSS (KB),
# from /usr/bin/time, and the jobs its run says it simulated.
timed() {
  local name="$1"; shift
  /usr/bin/time -f "%e %U %S %M" -o "$tmp/$name.time" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" || { cat "$tmp/$name.err"; exit 1; }
  local jobs
  jobs=$(grep -oE '^[0-9]+ runs, [0-9]+ jobs' "$tmp/$name.out" | awk '{print $3}' || true)
  echo "$name ${jobs:-0} $(cat "$tmp/$name.time")" >>"$tmp/rows"
}
: >"$tmp/rows"
timed gen "$tmp/bourse" sim gen "$tmp/bench.yaml" --format jsonl -o /dev/null
sed -i "s/^gen 0 /gen $JOBS /" "$tmp/rows"
timed base-1m "$tmp/bourse-base" sim run "$tmp/bench.yaml" -o "$tmp/r-base"
timed new-1m "$tmp/bourse" sim run "$tmp/bench.yaml" -o "$tmp/r-new"
timed new-tenth "$tmp/bourse" sim run "$tmp/bench-tenth.yaml" -o "$tmp/r-tenth"
timed base-cluster-cut "$tmp/bourse-base" sim run "$tmp/cluster-cut.yaml" -o "$tmp/c-base"
timed new-cluster-cut "$tmp/bourse" sim run "$tmp/cluster-cut.yaml" -o "$tmp/c-new"
timed new-cluster "$tmp/bourse" sim run examples/sim/bench-cluster.yaml -o "$tmp/c-all"
timed new-cluster-fixed "$tmp/bourse" sim run "$tmp/cluster-fixed.yaml" -o "$tmp/c-fixed"

printf '\n%-22s %9s %9s %9s %11s %9s\n' run jobs wall_s cpu_s "jobs/cpu_s" rss_MB
awk '{ cpu = $4 + $5; printf "%-22s %9d %9.1f %9.1f %11.0f %9.0f\n", $1, $2, $3, cpu, (cpu > 0 ? $2 / cpu : 0), $6 / 1024 }' "$tmp/rows"
echo
awk '
  { wall[$1] = $3; cpu[$1] = $4 + $5; rss[$1] = $6; jobs[$1] = $2 }
  END {
    printf "1M jobs, baseline / this commit: %.2f× in wall time, %.2f× in CPU time (goal: 117 s → 60 s, 1.95×)\n", wall["base-1m"] / wall["new-1m"], cpu["base-1m"] / cpu["new-1m"]
    printf "1M jobs, this commit: %.1f s wall, %.1f s CPU\n", wall["new-1m"], cpu["new-1m"]
    printf "memory, 1M jobs / a tenth of them: %.2f× (flat is 1)\n", rss["new-1m"] / rss["new-tenth"]
    printf "cluster, first days, baseline / this commit: %.1f× in CPU time\n", cpu["base-cluster-cut"] / cpu["new-cluster-cut"]
    printf "cluster, 149 days: %.0f jobs per CPU second adaptive, %.0f fixed (stretch goal: 2,000)\n", jobs["new-cluster"] / cpu["new-cluster"], jobs["new-cluster-fixed"] / cpu["new-cluster-fixed"]
  }' "$tmp/rows"
echo
grep -E '^(revenue|utilisation|jobs completed|jobs rejected)' "$tmp/new-1m.out" || true
echo "baseline's 1M run:"
grep -E '^(revenue|utilisation|jobs completed|jobs rejected)' "$tmp/base-1m.out" || true

echo
go test -run '^$' -bench '^BenchmarkMarket$' -benchtime 20000x -count 1 ./sim/ | grep -E '^Benchmark'
