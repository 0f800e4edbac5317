package sim_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/scenario"
	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/sim"
)

// TestRoutingRepeats: on forty H100 servers, five times the servers an
// offer goes to (exchange.DefaultRouteTo), many asking alike, a
// simulation routes its offers the same way on every run of one seed
// (the ties among asks alike are broken by the offers' ids, not by maps
// or clocks): the same contract log, byte for byte; and the contracts
// spread over more servers than one offer is routed to.
func TestRoutingRepeats(t *testing.T) {
	var servers []scenario.ServerSpec
	for i := range 40 {
		price := decimal.RequireFromString(fmt.Sprintf("0.%02d", 10+i%4)) // four prices, ten servers each
		servers = append(servers, scenario.ServerSpec{ID: fmt.Sprintf("h%02d", i), Model: "H100", MemoryMiB: 81920, Count: 2,
			Policy: server.Posted{P: contract.Flat(price)}})
	}
	run := func() ([]byte, map[string]bool) {
		clients := scenario.DefaultClients()
		for i := range clients {
			clients[i].Budget = clients[i].Budget.Mul(decimal.NewFromInt(100000))
		}
		var log bytes.Buffer
		m, err := sim.New(sim.Config{Scenario: "routing", Servers: servers, Clients: clients, Seed: 7,
			Workload: newDemoJobs(7, 2000, 100*time.Millisecond), Log: &log})
		require.NoError(t, err)
		_, err = m.Run(context.Background())
		require.NoError(t, err)
		cs, err := m.Contracts(context.Background())
		require.NoError(t, err)
		used := map[string]bool{}
		for _, c := range cs {
			used[c.Server] = true
		}
		js, err := json.Marshal(cs)
		require.NoError(t, err)
		return append(log.Bytes(), js...), used
	}
	first, used := run()
	again, _ := run()
	require.True(t, bytes.Equal(first, again), "one seed, another routing")
	assert.Greater(t, len(used), 8, "contracts on %d servers", len(used))
}
