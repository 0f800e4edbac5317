package sim_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/scenario"
	"github.com/bourse/bourse/sim"
	"github.com/bourse/bourse/sim/metrics"
)

// TestStandingOffers runs one workload with jobs waiting in the
// client's queue and in the House's book: with the book, every job still
// ends once (completed or not), nothing is left in the book or in escrow,
// the audit passes, fewer offers are made per job, and the same seed
// makes the same bytes.
func TestStandingOffers(t *testing.T) {
	const jobs = 1500
	run := func(standing bool) (metrics.Result, exchange.Store, []byte) {
		clients := scenario.DefaultClients()
		for i := range clients {
			clients[i].Budget = clients[i].Budget.Mul(decimal.NewFromInt(100000))
		}
		var log bytes.Buffer
		m, err := sim.New(sim.Config{Scenario: "demo", Servers: scenario.DefaultServers(), Clients: clients, Seed: 7,
			Workload: newDemoJobs(7, jobs, 20*time.Second), Standing: standing, Log: &log})
		require.NoError(t, err)
		r, err := m.Run(context.Background())
		require.NoError(t, err)
		rs, err := json.Marshal(r)
		require.NoError(t, err)
		return r, m.Store(), append(log.Bytes(), rs...)
	}
	queued, _, _ := run(false)
	book, store, first := run(true)
	s := book.Summary
	t.Logf("queue: %+v", queued.Summary)
	t.Logf("book:  %+v", s)
	assert.Equal(t, jobs, s.Completed+s.Rejected, "every job ended once")
	assert.Greater(t, s.Completed, jobs/2)
	assert.Less(t, float64(s.Offers)/jobs, float64(queued.Summary.Offers)/jobs, "waiting in the book, a job offers less")
	ctx := context.Background()
	rep, err := store.Ledger().Audit(ctx)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%s", rep)
	assert.Zero(t, rep.OpenHolds)
	left, err := store.Book(ctx, exchange.BookQuery{})
	require.NoError(t, err)
	assert.Empty(t, left, "the book is empty at the end")
	_, _, again := run(true)
	assert.Equal(t, string(first), string(again), "the same seed, the same bytes")
}
