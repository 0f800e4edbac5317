#!/usr/bin/env bash
# An independent client: natscli drives the market that `bourse demo` runs,
# through nothing but NATS subjects and JSON. It checks that the exchange is
# a discoverable micro service, that an offer made with `nats req` becomes
# a running contract, that a low offer is answered with counter-offers, that
# an offer with a wait becomes a contract (at once, or from the book), that
# a quote is answered, that the market data can be read, that bad JSON
# gets its typed error, and that the demo ends with a clean audit.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
nats="$(bash scripts/natscli.sh)"
tmp="$(mktemp -d)"
demo_pid=""
cleanup() {
  if [ -n "$demo_pid" ] && kill -0 "$demo_pid" 2>/dev/null; then kill -KILL "$demo_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "natscli-e2e: FAIL: $*" >&2; echo "--- demo output:" >&2; cat "$tmp/demo.out" >&2 || true; exit 1; }

go build -o "$tmp/bourse" ./cmd/bourse
"$tmp/bourse" demo --duration 10m --log "$tmp/demo.log" >"$tmp/demo.out" 2>&1 &
demo_pid=$!
url=""
for _ in $(seq 1 100); do
  url="$(grep -o 'NATS at nats://[0-9.:]*' "$tmp/demo.out" 2>/dev/null | head -n1 | cut -d' ' -f3 || true)"
  [ -n "$url" ] && break
  kill -0 "$demo_pid" 2>/dev/null || fail "the demo exited early"
  sleep 0.1
done
[ -n "$url" ] || fail "the demo printed no NATS address"
echo "natscli-e2e: demo market at $url"

"$nats" -s "$url" micro ls >"$tmp/micro.txt" 2>&1 || fail "nats micro ls: $(cat "$tmp/micro.txt")"
grep -q 'bourse-exchange' "$tmp/micro.txt" || fail "nats micro ls does not show bourse-exchange: $(cat "$tmp/micro.txt")"
echo "natscli-e2e: nats micro ls shows bourse-exchange"

req() { # req CLIENT VERB BODY
  "$nats" -s "$url" --inbox-prefix "_INBOX_$1" req "bourse.v1.client.$1.$2" "$3" --raw --timeout 15s --no-templates
}

# The demo's own bidders keep its servers busy: an offer may find every
# matching GPU taken and be rejected, as in any market; try again shortly,
# with a new request id each time (a request id keeps its first answer).
for attempt in $(seq 1 20); do
  offer='{"request_id":"natscli-1-'"$attempt"'","terms":{"currency":"CRED","gpus":1,"time_limit":"30s","prepayment":"5.00","p":[["0","0.50"]],"job":{"profile":{"utilization":"0.9","duration":"2s"}}}}'
  reply="$(req ada offer "$offer")" || fail "offer: $reply"
  echo "$reply" | grep -q '"contract"' && break
  sleep 0.5
done
echo "$reply" | grep -q '"contract"' || fail "20 offers made no contract: $reply"
echo "$reply" | grep -q '"client":"ada"' || fail "the contract is not ada's: $reply"
id="$(echo "$reply" | grep -o '"id":"c-[0-9a-f]*"' | head -n1 | cut -d'"' -f4)"
echo "natscli-e2e: nats req made contract $id"

again="$(req ada offer "$offer")" || fail "retried offer: $again"
echo "$again" | grep -q "\"id\":\"$id\"" || fail "a retried request id made another contract: $again"
echo "natscli-e2e: the retried request returned the same contract"

# A server counters only while it has free GPUs: try again while all are busy.
for attempt in $(seq 1 20); do
  low='{"request_id":"natscli-2-'"$attempt"'","terms":{"currency":"CRED","gpus":1,"time_limit":"30s","prepayment":"0.03","p":[["0","0.001"]]}}'
  reply="$(req bea offer "$low")" || fail "low offer: $reply"
  echo "$reply" | grep -q '"counters"' && break
  sleep 0.5
done
echo "$reply" | grep -q '"counters"' || fail "20 low offers got no counter-offers: $reply"
echo "natscli-e2e: a low offer was answered with counter-offers"

# An offer that may wait: a contract at once, or queued in the book and
# matched when the bots' jobs free GPUs; listed meanwhile, then a contract.
wait_offer='{"request_id":"natscli-wait","wait":"5m","terms":{"currency":"CRED","gpus":4,"time_limit":"30s","prepayment":"60.00","p":[["0","0.50"]],"job":{"profile":{"utilization":"0.9","duration":"2s"}}}}'
reply="$(req you offer "$wait_offer")" || fail "offer with a wait: $reply"
echo "$reply" | grep -Eq '"(contract|queued)"' || fail "an offer with a wait was neither accepted nor queued: $reply"
wid="$(echo "$reply" | grep -o '"id":"c-[0-9a-f]*"' | head -n1 | cut -d'"' -f4)"
if echo "$reply" | grep -q '"queued"'; then
  listed="$(req you waiting '{}')" || fail "waiting: $listed"
  echo "$listed" | grep -q "$wid" || echo "$listed" | grep -q '"offers":\[\]' || fail "waiting does not list $wid: $listed"
  for _ in $(seq 1 300); do
    got="$(req you contract "{\"contract\":\"$wid\"}" || true)"
    echo "$got" | grep -q '"queued_at"' && break
    sleep 0.1
  done
  echo "$got" | grep -q '"queued_at"' || fail "waiting offer $wid was not matched: $got"
  echo "natscli-e2e: an offer waited in the book and became contract $wid"
else
  echo "natscli-e2e: an offer with a wait was accepted at once: $wid"
fi

# A quote is answered by the servers (accepts, counters or rejections).
reply="$(req bea quote '{"terms":{"currency":"CRED","gpus":1,"time_limit":"30s","prepayment":"0.03","p":[["0","0.001"]]}}')" || fail "quote: $reply"
echo "$reply" | grep -Eq '"(accepts|counters|rejections)"' || fail "a quote got no servers' answers: $reply"
echo "natscli-e2e: a quote was answered: $reply"

# The market data: public, every two seconds in the demo, no client named.
"$nats" -s "$url" sub 'bourse.v1.market.CRED' --count 1 --raw >"$tmp/market.json" 2>&1 || fail "market data: $(cat "$tmp/market.json")"
grep -q '"currency":"CRED"' "$tmp/market.json" || fail "market data: $(cat "$tmp/market.json")"
grep -q '"settled":[1-9]' "$tmp/market.json" || fail "the market data shows no contract settled: $(cat "$tmp/market.json")"
! grep -Eq '"(ada|bea)"' "$tmp/market.json" || fail "the market data names a client: $(cat "$tmp/market.json")"
echo "natscli-e2e: nats sub read the market data"

reply="$(req bea offer '{"request_id":' || true)"
echo "$reply" | grep -q '"code":"invalid"' || fail "malformed JSON did not get the invalid code: $reply"
echo "natscli-e2e: malformed JSON got its typed error"

for _ in $(seq 1 150); do
  state="$(req ada contract "{\"contract\":\"$id\"}" | grep -o '"state":"[a-z]*"' | head -n1 || true)"
  [ "$state" = '"state":"settled"' ] && break
  sleep 0.1
done
[ "$state" = '"state":"settled"' ] || fail "contract $id did not settle: $state"
echo "natscli-e2e: contract $id settled"
full="$(req ada contract "{\"contract\":\"$id\"}")" || fail "contract: $full"
! echo "$full" | grep -Eq '"(cap_holds|spend_holds|last_seen|stuck)"' || fail "the contract reply carries the exchange's own fields: $full"
echo "natscli-e2e: the contract reads as its client's view, without the exchange's own fields"

logs="$(req ada logs "{\"contract\":\"$id\"}")" || fail "logs: $logs"
echo "$logs" | grep -q '"done":true' || fail "the logs of a synthetic job did not say done: $logs"
theirs="$(req bea logs "{\"contract\":\"$id\"}" || true)"
echo "$theirs" | grep -q '"code":"not_found"' || fail "bea read ada's logs: $theirs"
echo "natscli-e2e: ada read her contract's logs, bea was told there is no such contract"

balance="$(req ada balance '{"currency":"CRED"}')" || fail "balance: $balance"
echo "$balance" | grep -q '"account":"wallet/CRED/ada"' || fail "balance: $balance"

kill -TERM "$demo_pid"
status=0
wait "$demo_pid" || status=$?
demo_pid=""
tail -n1 "$tmp/demo.out" | grep -q ': pass$' || fail "the demo's audit did not pass"
[ "$status" = 0 ] || fail "the demo exited with $status"
echo "natscli-e2e: the demo stopped on SIGTERM with a clean audit"
echo "natscli-e2e: 11 passed, 0 failed"
