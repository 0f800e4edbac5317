#!/usr/bin/env bash
# make bench-ledger: our ledger's escrow round trips (a hold, then a capture
# of part of it: the ledger work of one contract) against pgbench's built-in
# tpcb-like workload, at 1, 8 and 32 concurrent clients, on the same
# throwaway PostgreSQL (run under scripts/pg.sh, which sets PG* and
# BOURSE_TEST_DATABASE_URL), alternating the two so that both see the same
# machine. Prints one table with the ratio ours / pgbench, and the
# in-memory ledger's figure beside it.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${BOURSE_TEST_DATABASE_URL:?run me under scripts/pg.sh (make bench-ledger does)}"
SECONDS_EACH="${BENCH_SECONDS:-8}"
CLIENTS="${BENCH_CLIENTS:-1 8 32}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

echo "bench-ledger: $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, ${BOURSE_PG_SETTINGS:-PostgreSQL}"
echo "bench-ledger: ${SECONDS_EACH}s per measurement; pgbench -s 1 -j 2 -b tpcb-like"
createdb pgbench 2>/dev/null || true
pgbench -q -i -s 1 pgbench >/dev/null 2>&1

go test -c -o "$tmp/sql.test" ./currency/sqlledger
go test -c -o "$tmp/mem.test" ./currency/mem

pairs() { # pairs FILE → the pairs/s figure of a go benchmark line
  awk '/pairs\/s/ { for (i = 1; i < NF; i++) if ($(i+1) == "pairs/s") print $i }' "$1" | tail -n1
}

printf '\n%-8s %16s %16s %8s %16s\n' clients "ours pairs/s" "pgbench tps" ratio "in-memory pairs/s"
for c in $CLIENTS; do
  "$tmp/sql.test" -test.run '^$' -test.bench "BenchmarkHoldCapture/group/clients=$c\$" -test.benchtime "${SECONDS_EACH}s" >"$tmp/ours.$c" 2>&1 || { cat "$tmp/ours.$c"; exit 1; }
  pgbench -c "$c" -j 2 -T "$SECONDS_EACH" -b tpcb-like pgbench >"$tmp/pgb.$c" 2>&1 || { cat "$tmp/pgb.$c"; exit 1; }
  "$tmp/mem.test" -test.run '^$' -test.bench "BenchmarkClients/clients=$c\$" -test.benchtime 2s >"$tmp/mem.$c" 2>&1 || { cat "$tmp/mem.$c"; exit 1; }
  ours="$(pairs "$tmp/ours.$c")"
  tps="$(awk '/^tps = / { print $3 }' "$tmp/pgb.$c" | tail -n1)"
  mem="$(pairs "$tmp/mem.$c")"
  ratio="$(awk -v a="$ours" -v b="$tps" 'BEGIN { printf "%.2f", a / b }')"
  printf '%-8s %16.0f %16.0f %8s %16.0f\n' "$c" "$ours" "$tps" "$ratio" "$mem"
done
echo
echo "ours: go test -bench BenchmarkHoldCapture/group ./currency/sqlledger (group commit on, 2 Apply calls per pair)"
echo "pgbench: one tpcb-like transaction (3 UPDATEs, 1 SELECT, 1 INSERT) per tps"
