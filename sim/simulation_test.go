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
	"github.com/bourse/bourse/sim/metrics"
)

// demoSimulation is the demo's scenario with budgets for a long run, trading
// jobs jobs.
func demoSimulation(t testing.TB, seed uint64, jobs int, log *bytes.Buffer) *sim.Simulation {
	t.Helper()
	clients := scenario.DefaultClients()
	for i := range clients {
		clients[i].Budget = clients[i].Budget.Mul(decimal.NewFromInt(100000))
	}
	cfg := sim.Config{Scenario: "demo", Servers: scenario.DefaultServers(), Clients: clients, Seed: seed,
		Workload: newDemoJobs(seed, jobs, 30*time.Second), KeepFinals: true}
	if log != nil {
		cfg.Log = log
	}
	m, err := sim.New(cfg)
	require.NoError(t, err)
	return m
}

// TestInProcessMarket drives 10,000 jobs through the exchange's House,
// the server nodes and the bidding strategies in one goroutine on a
// virtual clock, twice with one seed: the contract logs and results are
// the same bytes, the audit passes with no escrow open, every job is
// counted once, and every contract is charged what its server says it
// ran.
func TestInProcessMarket(t *testing.T) {
	const jobs = 10000
	run := func(seed uint64) (*sim.Simulation, metrics.Result, []byte) {
		var log bytes.Buffer
		m := demoSimulation(t, seed, jobs, &log)
		r, err := m.Run(context.Background())
		require.NoError(t, err)
		dump, err := m.Contracts(context.Background())
		require.NoError(t, err)
		js, err := json.Marshal(dump)
		require.NoError(t, err)
		rs, err := json.Marshal(r)
		require.NoError(t, err)
		return m, r, append(append(log.Bytes(), js...), rs...)
	}
	m, r, first := run(1)
	s := r.Summary
	t.Logf("%+v in %v of virtual time, %d events", s, m.Engine().Now().Sub(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), m.Engine().Events())
	assert.Equal(t, jobs, s.Jobs)
	assert.Equal(t, jobs, s.Completed+s.Rejected, "every job completed or not, once")
	assert.Greater(t, s.Completed, jobs/2, "the market traded")
	assert.GreaterOrEqual(t, s.Contracts, s.Completed)
	assert.Greater(t, s.Utilization, 0.0)
	assert.Positive(t, s.Revenue)
	assert.GreaterOrEqual(t, s.Welfare, s.Revenue*0.5, "completed jobs were worth something")

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
		case contract.StateSettled:
			settled++
			final, ok := m.Final(c.ID)
			require.True(t, ok, "%s settled (%s) but its server never ran it", c.ID, c.Reason)
			want, err := contract.Charge(c.Terms, final.Usage(), scenario.Currency.Scale)
			require.NoError(t, err)
			require.True(t, want.Charge.Equal(c.Charge), "%s (%s): charged %s, its server's final reading costs %s", c.ID, c.Reason, c.Charge, want.Charge)
		case contract.StateVoided:
			require.True(t, c.Refund.Equal(c.Terms.Prepayment))
		default:
			t.Fatalf("contract %s left %s", c.ID, c.State)
		}
	}
	assert.Equal(t, s.Contracts, len(cs))
	assert.Greater(t, settled, s.Completed-1)

	_, _, again := run(1)
	require.True(t, bytes.Equal(first, again), "the same seed must give the same contract log")
	_, _, other := run(2)
	assert.False(t, bytes.Equal(first, other), "another seed, another market")
}

// TestLinksNoNATS: the market's rules run without NATS: the packages the
// simulator is made of must not link it.
func TestLinksNoNATS(t *testing.T) {
	pkgs := []string{"../contract", "../canary", "../currency", "../caps", "../exchange", "../server", "../bidder/strategy", "../scenario", ".", "./workload", "./metrics", "./report"}
	out, err := exec.Command("go", append([]string{"list", "-deps"}, pkgs...)...).Output()
	require.NoError(t, err)
	for _, dep := range strings.Fields(string(out)) {
		assert.False(t, strings.HasPrefix(dep, "github.com/nats-io/"), "links %s", dep)
	}
}

// TestForget: a run that forgets ended contracts and compacts its ledger
// as it goes gives the same results and contract log as one that keeps
// everything, its audit still balances, and it keeps only what ended
// recently.
func TestForget(t *testing.T) {
	const jobs = 3000
	run := func(forget time.Duration) (*sim.Simulation, []byte) {
		var log bytes.Buffer
		clients := scenario.DefaultClients()
		for i := range clients {
			clients[i].Budget = clients[i].Budget.Mul(decimal.NewFromInt(100000))
		}
		m, err := sim.New(sim.Config{Scenario: "demo", Servers: scenario.DefaultServers(), Clients: clients, Seed: 1,
			Workload: newDemoJobs(1, jobs, 30*time.Second), Log: &log, Forget: forget})
		require.NoError(t, err)
		r, err := m.Run(context.Background())
		require.NoError(t, err)
		rs, err := json.Marshal(r)
		require.NoError(t, err)
		return m, append(log.Bytes(), rs...)
	}
	all, kept := run(0)
	some, forgot := run(time.Hour)
	require.True(t, bytes.Equal(kept, forgot), "forgetting what ended an hour ago changes nothing of the market")

	ctx := context.Background()
	rep, err := some.Store().Ledger().Audit(ctx)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%s", rep)
	assert.Zero(t, rep.OpenHolds)
	every, err := all.Contracts(ctx)
	require.NoError(t, err)
	recent, err := some.Contracts(ctx)
	require.NoError(t, err)
	assert.Less(t, len(recent), len(every)/4, "a day of jobs, an hour of them kept")
	t.Logf("kept %d of %d contracts", len(recent), len(every))
}
