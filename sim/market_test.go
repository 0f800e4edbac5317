package sim_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/scenario"
	"github.com/bourse/bourse/sim"
	"github.com/bourse/bourse/trade"
)

// market is the demo's scenario with budgets for a long run.
func market(t testing.TB, seed uint64, offers int, log *bytes.Buffer) *sim.Market {
	t.Helper()
	clients := scenario.DefaultClients()
	for i := range clients {
		clients[i].Budget = clients[i].Budget.Mul(decimal.NewFromInt(1000))
	}
	cfg := sim.Config{Servers: scenario.DefaultServers(), Clients: clients, Seed: seed, Offers: offers}
	if log != nil {
		cfg.Log = log
	}
	m, err := sim.New(cfg)
	require.NoError(t, err)
	return m
}

// TestInProcessMarket drives 10,000 offers through the exchange's House,
// the server nodes and the bidding strategies in one goroutine on a
// virtual clock, twice with one seed: the contract logs are the same bytes,
// the audit passes with no escrow open, and every contract is charged what
// its server says it ran.
func TestInProcessMarket(t *testing.T) {
	const offers = 10000
	run := func(seed uint64) (*sim.Market, sim.Stats, []byte) {
		var log bytes.Buffer
		m := market(t, seed, offers, &log)
		st := m.Run(7 * 24 * time.Hour)
		dump, err := m.Contracts(context.Background())
		require.NoError(t, err)
		js, err := json.Marshal(dump)
		require.NoError(t, err)
		return m, st, append(log.Bytes(), js...)
	}
	m, st, first := run(1)
	t.Logf("%+v in %v of virtual time, %d events", st, m.Engine().Now().Sub(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), m.Engine().Events())
	assert.GreaterOrEqual(t, st.Offers, offers)
	assert.Greater(t, st.Contracts, offers/10, "the market traded")

	ctx := context.Background()
	rep, err := m.Store().Ledger().Audit(ctx)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%s", rep)
	assert.Zero(t, rep.OpenHolds, "every contract ended")

	cs, err := m.Contracts(ctx)
	require.NoError(t, err)
	settled := 0
	for _, c := range cs {
		switch c.State {
		case trade.StateSettled:
			settled++
			final, ok := m.Final(c.ID)
			require.True(t, ok, "%s settled (%s) but its server never ran it", c.ID, c.Reason)
			want, err := contract.Charge(c.Terms, final.Usage(), scenario.Currency.Scale)
			require.NoError(t, err)
			require.True(t, want.Charge.Equal(c.Charge), "%s (%s): charged %s, its server's final reading costs %s", c.ID, c.Reason, c.Charge, want.Charge)
		case trade.StateVoided:
			require.True(t, c.Refund.Equal(c.Terms.Prepayment))
		default:
			t.Fatalf("contract %s left %s", c.ID, c.State)
		}
	}
	assert.Equal(t, st.Settled, settled)

	_, _, again := run(1)
	require.True(t, bytes.Equal(first, again), "the same seed must give the same contract log")
	_, _, other := run(2)
	assert.False(t, bytes.Equal(first, other), "another seed, another market")
}

// TestLinksNoNATS: the market's rules run without NATS: the packages the
// simulator is made of must not link it.
func TestLinksNoNATS(t *testing.T) {
	pkgs := []string{"../contract", "../currency", "../exchange", "../server", "../bidder/strategy", "../scenario", "."}
	out, err := exec.Command("go", append([]string{"list", "-deps"}, pkgs...)...).Output()
	require.NoError(t, err)
	for _, dep := range strings.Fields(string(out)) {
		assert.False(t, strings.HasPrefix(dep, "github.com/nats-io/"), "links %s", dep)
	}
}
