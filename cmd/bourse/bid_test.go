package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/bidder"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/market"
	"github.com/bourse/bourse/market/markettest"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/scenario"
	"github.com/bourse/bourse/server"
)

// bidMarket is a market with one server (atlas: 16 H100 at a posted 0.30
// per GPU-second, unless servers are given) and two funded clients that
// trade only through `bourse bid`.
type bidMarket struct {
	t      *testing.T
	m      *markettest.Market
	ledger currency.Ledger
}

func startBidMarket(t *testing.T, servers ...scenario.ServerSpec) *bidMarket {
	t.Helper()
	if servers == nil {
		servers = []scenario.ServerSpec{markettest.PostedH100s("atlas", 16, decimal.RequireFromString("0.30"))}
	}
	m := markettest.Start(t, market.Config{Clients: []scenario.ClientSpec{}, Servers: servers})
	m.Fund("CRED", decimal.NewFromInt(1000), "ada", "bob")
	return &bidMarket{t: t, m: m, ledger: m.Ledger}
}

// bid runs `bourse bid --nats URL --id id args…`.
func (b *bidMarket) bid(id string, args ...string) (stdout, stderr string, code int) {
	b.t.Helper()
	var out, errOut bytes.Buffer
	full := append([]string{"bid", "--nats", b.m.URL(), "--id", id, "--timeout", "5s"}, args...)
	code = run(context.Background(), full, &out, &errOut)
	return out.String(), errOut.String(), code
}

// ok runs bid and fails the test unless it exits 0.
func (b *bidMarket) ok(id string, args ...string) string {
	b.t.Helper()
	out, errOut, code := b.bid(id, args...)
	require.Equal(b.t, 0, code, "bourse bid %s: stderr %s", strings.Join(args, " "), errOut)
	return out
}

// offerJSON makes an offer with --json and returns its contract.
func (b *bidMarket) offerJSON(id string, args ...string) protocol.ContractView {
	b.t.Helper()
	var r protocol.OfferReply
	require.NoError(b.t, json.Unmarshal([]byte(b.ok(id, append([]string{"--json", "offer"}, args...)...)), &r))
	require.NotNil(b.t, r.Contract, "no contract: %+v", r)
	return *r.Contract
}

func (b *bidMarket) contract(id, contractID string) protocol.ContractView {
	b.t.Helper()
	var cs []protocol.ContractView
	require.NoError(b.t, json.Unmarshal([]byte(b.ok(id, "--json", "contracts")), &cs))
	for _, k := range cs {
		if k.ID == contractID {
			return k
		}
	}
	b.t.Fatalf("%s has no contract %s", id, contractID)
	return protocol.ContractView{}
}

func (b *bidMarket) contractsOf(id string) []protocol.ContractView {
	b.t.Helper()
	var cs []protocol.ContractView
	require.NoError(b.t, json.Unmarshal([]byte(b.ok(id, "--json", "contracts", "--limit", "1000")), &cs))
	return cs
}

func (b *bidMarket) waitState(id, contractID string, want contract.State) protocol.ContractView {
	b.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		k := b.contract(id, contractID)
		if k.State == want {
			return k
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("%s is %s, want %s", contractID, k.State, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (b *bidMarket) balance(id string) currency.Balance {
	b.t.Helper()
	bal, err := b.ledger.Balance(context.Background(), currency.WalletID("CRED", id))
	require.NoError(b.t, err)
	return bal
}

// short is a one-GPU offer whose synthetic job runs for d.
func short(d string) []string {
	return []string{"--gpus", "1", "--model", "H100", "--price", "0.40", "--duration", d, "--time-limit", "1m"}
}

func TestBid(t *testing.T) {
	b := startBidMarket(t)

	t.Run("NeedsID", func(t *testing.T) {
		var out, errOut bytes.Buffer
		code := run(context.Background(), []string{"bid", "--nats", b.m.URL(), "balance"}, &out, &errOut)
		assert.Equal(t, exitUsage, code)
		assert.Contains(t, errOut.String(), "--id is required")
	})

	t.Run("OfferAccepted", func(t *testing.T) {
		out := b.ok("ada", append([]string{"offer"}, short("500ms")...)...)
		assert.Contains(t, out, "contract c-")
		assert.Contains(t, out, "with atlas: 1× H100")
		assert.Contains(t, out, "at 0.4/GPU-s (1440.00/GPU-h); prepayment 24.00 CRED escrowed", "the maximum charge 60·0.40, at CRED's scale; the price per GPU-hour too")
		assert.Contains(t, out, "watch it: bourse bid --nats "+b.m.URL()+" --id ada watch c-")
	})

	t.Run("OfferJSON", func(t *testing.T) {
		k := b.offerJSON("ada", "--gpus", "2", "--price", "0.35", "--duration", "500ms", "--time-limit", "30s")
		assert.Equal(t, "atlas", k.Server)
		assert.Equal(t, 2, k.Terms.GPUs)
		assert.True(t, k.Terms.Prepayment.Equal(decimal.RequireFromString("21")), "the maximum charge 2·30·0.35: %s", k.Terms.Prepayment)
	})

	t.Run("Prepayment", func(t *testing.T) {
		terms := []string{"--price", "0.40", "--duration", "100ms", "--time-limit", "5s"} // the maximum charge 5·0.40 = 2
		for _, tt := range []struct{ flag, want string }{{"1.5", "1.5"}, {"2", "2"}, {"50", "2"}} {
			k := b.offerJSON("ada", append(terms, "--prepayment", tt.flag)...)
			assert.True(t, k.Terms.Prepayment.Equal(decimal.RequireFromString(tt.want)),
				"--prepayment %s escrows %s, at most the maximum charge: %s", tt.flag, tt.want, k.Terms.Prepayment)
		}
		k := b.offerJSON("ada", append(terms[2:], "--auto", "fixed", "--value", "0.40", "--prepayment", "50")...)
		assert.True(t, k.Terms.Prepayment.Equal(decimal.NewFromInt(2)), "--auto caps it at each bid's maximum charge: %s", k.Terms.Prepayment)
		_, errOut, code := b.bid("ada", append([]string{"offer", "--prepayment", "0"}, terms...)...)
		assert.Equal(t, exitUsage, code)
		assert.Contains(t, errOut, "--prepayment 0: want more than 0")
	})

	t.Run("RetryEscrowsOnce", func(t *testing.T) {
		args := append([]string{"--request-id", "retry-1"}, short("1m")...)
		first := b.offerJSON("ada", args...)
		again := b.offerJSON("ada", args...)
		assert.Equal(t, first.ID, again.ID)
		// This contract's hold, not the wallet's held total, which the
		// other subtests' contracts change as they settle meanwhile.
		held, err := b.ledger.Hold(context.Background(), currency.HoldID(first.ID))
		require.NoError(t, err)
		assert.True(t, held.Amount.Equal(first.Terms.Prepayment), "held %s for one prepayment %s", held.Amount, first.Terms.Prepayment)
		es, err := b.ledger.Statement(context.Background(), currency.WalletID("CRED", "ada"), 0, 1000)
		require.NoError(t, err)
		escrows := 0
		for _, e := range es {
			if e.Hold == currency.HoldID(first.ID) && e.Amount.IsNegative() {
				escrows++
			}
		}
		assert.Equal(t, 1, escrows)

		// The start follows the answer: a kill that comes first voids the
		// contract, one that comes after settles it.
		out := b.ok("ada", "kill", first.ID)
		assert.Regexp(t, `kill sent to atlas|voided before it started \(killed\)`, out)
		out = b.ok("ada", "watch", first.ID)
		assert.Regexp(t, `(settled|voided) +killed`, out)
		// This contract's hold, not the wallet's: the other subtests'
		// contracts may still be ending.
		h, err := b.ledger.Hold(context.Background(), currency.HoldID(first.ID))
		require.NoError(t, err)
		assert.NotEqual(t, currency.HoldOpen, h.Status, "the kill released the hold")
	})

	t.Run("Counters", func(t *testing.T) {
		low := []string{"offer", "--gpus", "1", "--price", "0.01", "--duration", "500ms", "--time-limit", "30s"}
		out, errOut, code := b.bid("ada", low...)
		assert.Equal(t, exitRefused, code, "no contract is no success")
		assert.Contains(t, out, "counter-offer")
		assert.Regexp(t, `(?m)^1 +ask-[0-9a-f]{24} +atlas +1 +any GPU +30s +0\.3/GPU-s \(1080\.00/GPU-h\) +9\.00 CRED`, out)
		assert.Contains(t, out, "0.3/GPU-s")
		assert.Contains(t, errOut, "no server accepted the offer; 1 counter-offer(s)")
		assert.Contains(t, errOut, "; take one as shown with: bourse bid --nats "+b.m.URL()+" --id ada offer --take N (its number) or --take ID (code rejected)")

		out = b.ok("ada", "offer", "--take", "1")
		assert.Contains(t, out, "contract c-")

		var r protocol.OfferReply
		out, _, code = b.bid("ada", append([]string{"--json"}, low...)...)
		assert.NotEqual(t, 0, code)
		require.NoError(t, json.Unmarshal([]byte(out), &r))
		require.Len(t, r.Counters, 1)
		assert.Nil(t, r.Contract)

		_, errOut, code = b.bid("ada", "offer", "--take", "3")
		assert.Equal(t, exitUsage, code)
		assert.Contains(t, errOut, "there are 1 counter-offers")
	})

	for _, s := range []string{"fixed", "cheapest", "adaptive", "deadline"} {
		t.Run("Auto/"+s, func(t *testing.T) {
			out := b.ok("ada", "offer", "--auto", s, "--value", "0.40", "--deadline", "1m", "--duration", "300ms", "--time-limit", "20s")
			assert.Contains(t, out, "offer 1 at ")
			assert.Contains(t, out, "contract c-")
		})
	}
	t.Run("AutoGivesUp", func(t *testing.T) {
		_, errOut, code := b.bid("ada", "offer", "--auto", "fixed", "--value", "0.10", "--rounds", "2", "--duration", "300ms", "--time-limit", "20s")
		assert.Equal(t, exitRefused, code)
		assert.Contains(t, errOut, "gave up after 2 offers")
	})

	t.Run("Watch", func(t *testing.T) {
		k := b.offerJSON("ada", short("1500ms")...)
		out := b.ok("ada", "watch", k.ID)
		assert.Contains(t, out, "running")
		assert.Contains(t, out, "due ")
		assert.Contains(t, out, "settled   completed")
		assert.Regexp(t, `charged \d+\.\d\d, refunded \d+\.\d\d CRED`, out)
		assert.Regexp(t, `due \d+\.\d\d of 24\.00 CRED`, out)

		// Watched after the settlement: the final state, as JSON lines.
		out = b.ok("ada", "--json", "watch", k.ID)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		var ev bidder.Update // each line the event with the whole contract
		require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &ev))
		assert.Equal(t, protocol.EventSettled, ev.Type)
		assert.True(t, ev.Contract.Charge.Add(ev.Contract.Refund).Equal(k.Terms.Prepayment))
		assert.True(t, ev.Contract.Terms.Equal(k.Terms), "the terms, which the settled event leaves out")
	})

	t.Run("SuspendResume", func(t *testing.T) {
		k := b.offerJSON("ada", short("1m")...)
		b.waitState("ada", k.ID, contract.StateRunning)
		out := b.ok("ada", "suspend", k.ID)
		assert.Contains(t, out, "suspend sent to atlas")
		out = b.ok("ada", "watch", k.ID)
		assert.Contains(t, out, "settled   suspended")

		var r protocol.OfferReply
		require.NoError(t, json.Unmarshal([]byte(b.ok("ada", "--json", "resume", k.ID, "--price", "0.45")), &r))
		require.NotNil(t, r.Contract)
		assert.Equal(t, k.ID, r.Contract.Resumes)
		assert.Equal(t, "atlas", r.Contract.Terms.Server, "the suspended contract's server")
		assert.True(t, r.Contract.Terms.P.Equal(contract.Flat(decimal.RequireFromString("0.45"))))
		assert.Equal(t, k.Terms.TimeLimit, r.Contract.Terms.TimeLimit)
		b.ok("ada", "kill", r.Contract.ID)
	})

	t.Run("Contracts", func(t *testing.T) {
		out := b.ok("ada", "contracts")
		assert.Contains(t, out, "ID")
		assert.Contains(t, out, "PREPAYMENT")
		assert.Contains(t, out, "settled")
		assert.Regexp(t, `(?m) settled +\w+ +1 +24\.00 +\d+\.\d\d +\d+\.\d\d `, out, "amounts at CRED's scale")
		var cs []protocol.ContractView
		require.NoError(t, json.Unmarshal([]byte(b.ok("ada", "--json", "contracts")), &cs))
		assert.GreaterOrEqual(t, len(cs), 5)
		assert.Contains(t, b.ok("bob", "contracts"), "no contracts yet")
	})

	t.Run("Balance", func(t *testing.T) {
		out := b.ok("ada", "balance")
		assert.Contains(t, out, "wallet/CRED/ada")
		assert.Contains(t, out, "AVAILABLE")
		assert.Regexp(t, `wallet/CRED/ada +CRED +2 +\d+\.\d\d +\d+\.\d\d +\d+\.\d\d\n`, out, "the scale, and amounts at it")
		var bal protocol.BalanceReply
		require.NoError(t, json.Unmarshal([]byte(b.ok("ada", "--json", "balance")), &bal))
		want := b.balance("ada")
		assert.True(t, bal.Available.Equal(want.Available) && bal.Held.Equal(want.Held), "%+v, ledger says %+v", bal, want)
		assert.Equal(t, int32(2), bal.Scale)
	})

	t.Run("Statement", func(t *testing.T) {
		out := b.ok("ada", "statement")
		assert.Contains(t, out, "BALANCE")
		assert.Contains(t, out, "+1000.00")
		var es []currency.Entry
		require.NoError(t, json.Unmarshal([]byte(b.ok("ada", "--json", "statement", "--limit", "3")), &es))
		require.Len(t, es, 3)
		assert.True(t, es[0].Balance.Equal(decimal.NewFromInt(1000)))
		assert.Contains(t, b.ok("ada", "statement", "--limit", "3"), "more: bourse bid --nats "+b.m.URL()+" --id ada statement --after 3")
	})

	t.Run("File", func(t *testing.T) {
		dir := t.TempDir()
		js := filepath.Join(dir, "offer.json")
		require.NoError(t, os.WriteFile(js, []byte(`{"currency":"CRED","gpus":1,"time_limit":"20s","prepayment":"5.00","p":[["0","0.40"]],"job":{"profile":{"utilization":"1","duration":"300ms"}}}`), 0o644))
		k := b.offerJSON("ada", "-f", js)
		assert.True(t, k.Terms.Prepayment.Equal(decimal.NewFromInt(5)))

		yml := filepath.Join(dir, "offer.yaml")
		require.NoError(t, os.WriteFile(yml, []byte("gpus: 1\nclass: {model: H100}\ntime_limit: 20s\np: [[0, 0.40]]\njob:\n  profile: {utilization: 0.5, duration: 300ms}\n"), 0o644))
		k = b.offerJSON("ada", "-f", yml)
		assert.Equal(t, "CRED", k.Terms.Currency, "--currency fills it in")
		assert.True(t, k.Terms.Prepayment.Equal(decimal.RequireFromString("8")), "the maximum charge 20·0.40: %s", k.Terms.Prepayment)

		bad := filepath.Join(dir, "bad.yaml")
		require.NoError(t, os.WriteFile(bad, []byte("gpus: 1\ngpus: 2\ntime_limit: 20s\np: [[0, 0.40]]\n"), 0o644))
		_, errOut, code := b.bid("ada", "offer", "-f", bad)
		assert.Equal(t, exitUsage, code)
		assert.Contains(t, errOut, "(code invalid)")

		_, errOut, code = b.bid("ada", "offer", "-f", js, "--gpus", "2")
		assert.Equal(t, exitUsage, code)
		assert.Contains(t, errOut, "drop --gpus")
	})

	t.Run("OtherClient", func(t *testing.T) {
		k := b.offerJSON("ada", short("1m")...)
		for _, args := range [][]string{{"watch", k.ID}, {"suspend", k.ID}, {"kill", k.ID}, {"resume", k.ID, "--price", "0.5"}} {
			_, errOut, code := b.bid("bob", args...)
			assert.Equal(t, exitRefused, code, "bob %v", args)
			assert.Contains(t, errOut, "(code not_found)", "bob %v", args)
			assert.Contains(t, errOut, "no such contract of yours")
		}
		assert.NotContains(t, b.ok("bob", "contracts"), k.ID)
		assert.Equal(t, contract.StateRunning, b.contract("ada", k.ID).State, "bob's kill did nothing")
		b.ok("ada", "kill", k.ID)
	})

	t.Run("ContractsWideAndJSON", func(t *testing.T) {
		// An offer for any GPU: the model sold is atlas's, H100, from
		// the start on; -o json writes money at CRED's places.
		k := b.offerJSON("bob", "--gpus", "1", "--price", "0.40", "--duration", "200ms", "--time-limit", "1m")
		b.waitState("bob", k.ID, contract.StateSettled)
		wide := b.ok("bob", "contracts", "-o", "wide")
		assert.Regexp(t, `MODEL +PRICE/GPU-H +PREPAYMENT`, wide)
		assert.Regexp(t, `(?m)^`+k.ID+` +atlas +settled +completed +1 +H100 +1440\.00/GPU-h +24\.00 +0\.08 +23\.92 +0\.2 `, wide)
		js := b.ok("bob", "contracts", "-o", "json", "--state", "settled")
		assert.Contains(t, js, `"prepayment": "24.00"`)
		assert.Contains(t, js, `"model": "H100"`)
		assert.NotContains(t, js, `"state": "running"`)
		_, errOut, code := b.bid("bob", "contracts", "-o", "yaml")
		assert.Equal(t, exitUsage, code, errOut)
		assert.Contains(t, b.ok("bob", "show", k.ID), "Model sold   H100\n")
		// Filters, as squeue's: by server and by time.
		assert.Contains(t, b.ok("bob", "contracts", "--server", "atlas", "--since", "1h"), k.ID)
		assert.Equal(t, "none of your newest 1 contracts is one the filters keep (--limit for more)\n", b.ok("bob", "contracts", "--server", "nobody", "--limit", "1"))
		assert.NotContains(t, b.ok("bob", "contracts", "--since", time.Now().Add(time.Minute).UTC().Format(time.RFC3339)), k.ID)
		_, errOut, code = b.bid("bob", "contracts", "--since", "yesterday")
		assert.Equal(t, exitUsage, code, errOut)
	})

	t.Run("Errors", func(t *testing.T) {
		tests := []struct {
			name string
			args []string
			code int
			want []string
		}{
			{"NoMatch", []string{"offer", "--gpus", "64", "--price", "1", "--prepayment", "1"}, exitRefused, []string{"(code no_match)", "try fewer GPUs or another --model"}},
			{"InsufficientFunds", []string{"offer", "--gpus", "8", "--price", "0.40", "--time-limit", "1h"}, exitRefused, []string{"(code insufficient_funds)", "a shorter --time-limit", "bourse admin grant --currency CRED ada"}},
			// The default prepayment, the maximum charge 0.001, rounds to
			// 0.00: said so, not as the user's own "terms.prepayment: 0".
			{"DefaultPrepaymentZero", []string{"offer", "--price", "0.0001", "--time-limit", "10s"}, exitFailure, []string{"the default prepayment, the most this offer can cost (1 GPU(s) busy for the whole 10s at 0.0001/GPU-s), rounds down to 0", "give --prepayment"}},
			{"InvalidOffer", []string{"offer", "--price", "0.4", "--utilization", "2"}, exitUsage, []string{"--utilization: 2; want 0..1"}},
			{"NoPrice", []string{"offer"}, exitUsage, []string{"say what you pay"}},
			{"BadCurve", []string{"offer", "--p", "1:0.5,0.5:0.6"}, exitUsage, []string{"--p", "invalid_curve"}},
			{"NoSuchContract", []string{"kill", "c-nosuch"}, exitRefused, []string{"(code not_found)"}},
			{"UnknownStrategy", []string{"offer", "--auto", "greedy", "--value", "1"}, exitUsage, []string{"want fixed, cheapest, adaptive, deadline or going"}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				out, errOut, code := b.bid("ada", tt.args...)
				assert.Equal(t, tt.code, code, "stdout %s", out)
				assert.True(t, strings.HasPrefix(errOut, "bourse: "), errOut)
				for _, w := range tt.want {
					assert.Contains(t, errOut, w)
				}
			})
		}
	})
}

// TestBidCounterPrices takes counter-offers of a server that prices by
// utilisation, whose scaled prices once carried 18 decimal places: the
// table and the JSON show each price exactly, without trailing zeros, and
// the prepayment at CRED's scale.
func TestBidCounterPrices(t *testing.T) {
	b := startBidMarket(t, scenario.ServerSpec{ID: "boreal", Model: "H100", MemoryMiB: 81920, Count: 4,
		Policy: server.Utilization{Base: server.Posted{P: contract.Flat(decimal.RequireFromString("0.20"))}, K: decimal.RequireFromString("2")}})
	low := []string{"offer", "--gpus", "1", "--price", "0.01", "--duration", "500ms", "--time-limit", "30s"}
	out, _, _ := b.bid("ada", low...)
	assert.Regexp(t, `(?m)^1 +ask-[0-9a-f]{24} +boreal +1 +any GPU +30s +0\.2/GPU-s \(720\.00/GPU-h\) +6\.00 CRED`, out)

	raw, _, _ := b.bid("ada", append([]string{"--json"}, low...)...)
	assert.Contains(t, raw, `"0.2"`)
	assert.NotContains(t, raw, "0.200000000000000000")
	var r protocol.OfferReply
	require.NoError(t, json.Unmarshal([]byte(raw), &r))
	require.Len(t, r.Counters, 1)
	assert.True(t, r.Counters[0].Terms.P.Equal(contract.Flat(decimal.RequireFromString("0.2"))))

	k := b.offerJSON("ada", "--take", "1")
	assert.Equal(t, "boreal", k.Server)
}

// TestBidTake makes one low offer below four servers' asks, answered
// with a counter-offer from each ask, at its posted price (no server is
// asked): the counter-offers are numbered cheapest at full use first, ties by server, whatever order the servers answered in, each
// shown with its id; --take takes one of those shown, by number or id,
// as shown, and makes no new offer; --take SERVER with an offer's terms
// offers them to that server alone.
func TestBidTake(t *testing.T) {
	posted := func(id, p string) scenario.ServerSpec {
		return scenario.ServerSpec{ID: id, Model: "H100", MemoryMiB: 81920, Count: 8, Policy: server.Posted{P: contract.Flat(decimal.RequireFromString(p))}}
	}
	b := startBidMarket(t, posted("dear", "0.50"), posted("mid-b", "0.30"), posted("cheap", "0.20"), posted("mid-a", "0.30"))
	low := []string{"offer", "--gpus", "1", "--price", "0.01", "--duration", "300ms", "--time-limit", "30s"}
	order := regexp.MustCompile(`(?m)^(\d) +(ask-[0-9a-f]{24}) +(\S+) +1 +any GPU`)
	shown := func(out string) (got, ids []string) {
		for _, m := range order.FindAllStringSubmatch(out, -1) {
			got, ids = append(got, m[1]+" "+m[3]), append(ids, m[2])
		}
		return got, ids
	}
	for range 5 {
		out, _, _ := b.bid("ada", low...)
		got, _ := shown(out)
		require.Equal(t, []string{"1 cheap", "2 mid-a", "3 mid-b", "4 dear"}, got, out)
	}

	t.Run("ByNumber", func(t *testing.T) {
		b.bid("ada", low...)
		assert.Equal(t, "cheap", b.offerJSON("ada", "--take", "1").Server)
		b.bid("ada", low...)
		assert.Equal(t, "mid-b", b.offerJSON("ada", "--take", "3").Server)
	})

	t.Run("ByID", func(t *testing.T) {
		// The ids quote --json prints name the counter-offers, and the
		// one taken is the one shown: its server, price and prepayment.
		var q protocol.QuoteReply
		require.NoError(t, json.Unmarshal([]byte(b.ok("ada", append([]string{"--json", "quote"}, low[1:]...)...)), &q))
		require.Len(t, q.Counters, 4)
		want := q.Counters[2]
		require.Equal(t, "mid-b", want.Server)
		k := b.offerJSON("ada", "--take", want.ID)
		assert.Equal(t, "mid-b", k.Server)
		assert.True(t, k.Terms.P.Equal(want.Terms.P))
		assert.True(t, k.Terms.Prepayment.Equal(want.Terms.Prepayment))

		// And from a table, by the start of an id, taken by quote.
		out, _, _ := b.bid("ada", low...)
		_, ids := shown(out)
		require.Len(t, ids, 4)
		out = b.ok("ada", "quote", "--take", ids[3][:8])
		assert.Contains(t, out, "taking counter-offer 4 ("+ids[3]+") of dear")
		assert.Regexp(t, `contract c-\S+ with dear`, out)
	})

	t.Run("Twice", func(t *testing.T) {
		// The second --take of the same counter-offer makes no second
		// contract: it is refused, and names the contract the first made.
		b.bid("ada", low...)
		before := len(b.contractsOf("ada"))
		k := b.offerJSON("ada", "--take", "1")
		_, errOut, code := b.bid("ada", "offer", "--take", "1")
		assert.Equal(t, exitUsage, code, errOut)
		assert.Contains(t, errOut, "made contract "+k.ID+"; taking it again would make a second contract")
		assert.Len(t, b.contractsOf("ada"), before+1, "one take, one contract")
	})

	t.Run("PinsTheServer", func(t *testing.T) {
		// cheap would accept 0.25 outright; --take mid-a offers to
		// mid-a alone, and takes its counter-offer at 0.30.
		k := b.offerJSON("ada", "--gpus", "1", "--price", "0.25", "--duration", "300ms", "--time-limit", "30s", "--take", "mid-a")
		assert.Equal(t, "mid-a", k.Server)
		assert.Equal(t, "0.3", k.Terms.P[0].Y.String())
		_, errOut, code := b.bid("ada", "offer", "--gpus", "1", "--price", "0.25", "--take", "nosuch")
		assert.Equal(t, exitRefused, code, errOut)
		assert.Contains(t, errOut, "code no_match")
	})

	t.Run("BadTake", func(t *testing.T) {
		b.bid("ada", low...)
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"offer", "--take", "9"}, "--take 9: there are 4 counter-offers, numbered from 1"},
			{[]string{"offer", "--take", "2", "--price", "0.5"}, "--take 2 takes a counter-offer as it was shown, on its server's terms: drop --price"},
			{[]string{"offer", "--take", "nosuch"}, "--take nosuch: no counter-offer of that number, id or server (there are 4, from cheap, dear, mid-a, mid-b)"},
		} {
			_, errOut, code := b.bid("ada", tc.args...)
			assert.Equal(t, exitUsage, code, "%v: %s", tc.args, errOut)
			assert.Contains(t, errOut, tc.want)
		}
		_, errOut, code := b.bid("bob", "offer", "--take", "1")
		assert.Equal(t, exitUsage, code)
		assert.Contains(t, errOut, "no counter-offer has been shown here lately")
	})
}

func TestBidUnavailable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"bid", "--nats", "nats://" + addr, "--id", "ada", "balance"}, &out, &errOut)
	assert.Equal(t, exitUnavailable, code)
	assert.Contains(t, errOut.String(), "(code unavailable)")
	assert.Contains(t, errOut.String(), "is NATS running")
}

// TestBidAutoNoExchange negotiates where no exchange answers: the
// negotiation ends at the first offer, and says to look before bidding
// again rather than retry.
func TestBidAutoNoExchange(t *testing.T) {
	ns := natstest.Start(t)
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"bid", "--nats", ns.ClientURL(), "--id", "ada", "offer",
		"--auto", "cheapest", "--value", "0.40", "--time-limit", "20s", "--scale", "2"}, &out, &errOut)
	assert.Equal(t, exitUnavailable, code)
	assert.Contains(t, errOut.String(), "(code unavailable)")
	assert.Contains(t, errOut.String(), "see bourse bid contracts before offering again")
	assert.Equal(t, 1, strings.Count(out.String(), "offer "), "one offer, no second round: %s", out.String())
}

func TestYAMLToJSON(t *testing.T) {
	got, err := yamlToJSON([]byte("gpus: 2\nprepayment: 12.50\np:\n  - [0.5, 0]\n  - [2, 0.004]\npreemptible: true\nclass: {min_memory_mib: 0x10}\n"))
	require.NoError(t, err)
	assert.JSONEq(t, `{"gpus":2,"prepayment":"12.50","p":[["0.5","0"],["2","0.004"]],"preemptible":true,"class":{"min_memory_mib":16}}`, string(got))
	_, err = yamlToJSON([]byte("gpus: [1"))
	assert.Error(t, err)
}
