#!/usr/bin/env bash
# make bench-scale: the simulator on Alibaba's GPU cluster at 13, 130,
# 1,213 and 12,130 nodes (scripts/openb-scale.go scales the node and pod
# lists together; the last is the node list copied ten times), adaptive
# bidders, one policy: jobs per CPU second and peak memory, for this
# commit and a baseline built from another commit in the same invocation.
#
# OPENB_DIR is a folder with the trace's openb_node_list_gpu_node.csv and
# openb_pod_list_default.csv (github.com/alibaba/clusterdata,
# cluster-trace-gpu-v2023/csv); without it the lists are made up in the
# trace's shape. BENCH_SCALE_BASE is the baseline's commit (empty: none);
# BENCH_SCALE_BASE_JOBS caps the baseline's jobs at 12,130 nodes (100:
# it asks every one of 12,130 servers for each refused offer, and its
# whole run takes hours); BENCH_SCALE_SIZES the sizes.
set -euo pipefail
cd "$(dirname "$0")/.."
BASE="${BENCH_SCALE_BASE:-}"
BASE_JOBS="${BENCH_SCALE_BASE_JOBS:-100}"
SIZES="${BENCH_SCALE_SIZES:-13 130 1213 12130}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

lists=()
src="made up in the trace's shape"
if [ -n "${OPENB_DIR:-}" ]; then
  lists=(-nodes "$OPENB_DIR/openb_node_list_gpu_node.csv" -pods "$OPENB_DIR/openb_pod_list_default.csv")
  src="the trace's own lists from $OPENB_DIR"
fi
go build -o "$tmp/bourse" ./cmd/bourse
if [ -n "$BASE" ]; then
  mkdir "$tmp/base"
  git archive "$BASE" | tar -x -C "$tmp/base"
  (cd "$tmp/base" && go build -o "$tmp/bourse-base" ./cmd/bourse)
fi
echo "bench-scale: $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, $(go version | cut -d' ' -f3); this commit $(git rev-parse --short HEAD)${BASE:+, baseline $(git rev-parse --short "$BASE")}; $src"

# timed NAME CMD… → NAME's jobs, wall seconds, CPU seconds and peak RSS (KB)
timed() {
  local name="$1"; shift
  /usr/bin/time -f "%e %U %S %M" -o "$tmp/$name.time" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" || { cat "$tmp/$name.err"; exit 1; }
  local jobs
  jobs=$(grep -oE '^[0-9]+ runs, [0-9]+ jobs' "$tmp/$name.out" | awk '{print $3}' || true)
  echo "$name ${jobs:-0} $(cat "$tmp/$name.time")" >>"$tmp/rows"
}
: >"$tmp/rows"
for n in $SIZES; do
  go run scripts/openb-scale.go -n "$n" -o "$tmp/s$n" "${lists[@]}"
  if [ -n "$BASE" ]; then
    if [ "$n" -gt 1213 ]; then
      go run scripts/openb-scale.go -n "$n" -jobs "$BASE_JOBS" -o "$tmp/b$n" "${lists[@]}"
      timed "base-$n" "$tmp/bourse-base" sim run "$tmp/b$n/scenario.yaml" --parallel 1 -o "$tmp/rb$n"
    else
      timed "base-$n" "$tmp/bourse-base" sim run "$tmp/s$n/scenario.yaml" --parallel 1 -o "$tmp/rb$n"
    fi
  fi
  timed "new-$n" "$tmp/bourse" sim run "$tmp/s$n/scenario.yaml" --parallel 1 -o "$tmp/rn$n"
  grep -E '^(revenue|jobs completed|jobs rejected|offers per job|wait p50|utilisation) ' "$tmp/new-$n.out" | sed "s/^/  $n nodes: /" || true
done

printf '\n%-12s %9s %9s %9s %11s %9s\n' run jobs wall_s cpu_s "jobs/cpu_s" rss_MB
awk '{ cpu = $4 + $5; printf "%-12s %9d %9.1f %9.1f %11.0f %9.0f\n", $1, $2, $3, cpu, (cpu > 0 ? $2 / cpu : 0), $6 / 1024 }' "$tmp/rows"
echo
awk -v sizes="$SIZES" '
  { cpu[$1] = $4 + $5; jobs[$1] = $2 }
  END {
    n = split(sizes, s, " ")
    first = "new-" s[1]; last = "new-" s[n]
    if (cpu[first] > 0 && cpu[last] > 0)
      printf "this commit: jobs per CPU second fall %.2f× from %s to %s nodes (goal: at most 2×)\n", (jobs[first] / cpu[first]) / (jobs[last] / cpu[last]), s[1], s[n]
    for (i = 1; i <= n; i++) {
      b = "base-" s[i]; c = "new-" s[i]
      if (cpu[b] > 0 && cpu[c] > 0)
        printf "%s nodes: this commit / baseline, jobs per CPU second: %.1f×\n", s[i], (jobs[c] / cpu[c]) / (jobs[b] / cpu[b])
    }
  }' "$tmp/rows"
