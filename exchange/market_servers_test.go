package exchange_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/housetest"
	"github.com/bourse/bourse/protocol"
)

// TestMarketServers: market data names the servers heard from in its
// currency, by id, with their GPUs and how many are free (what reports
// divide sales by), and the live servers list says the same with what
// each runs.
func TestMarketServers(t *testing.T) {
	h := housetest.New(t, exchange.Config{})
	h.Server("boreal", "H100", 4, nil)
	h.Server("atlas", "A100", 2, nil)
	ms, err := h.House.Market(context.Background())
	require.NoError(t, err)
	require.Len(t, ms, 1)
	assert.Equal(t, []protocol.MarketServer{{ID: "atlas", GPUs: 2, Free: 2}, {ID: "boreal", GPUs: 4, Free: 4}}, ms[0].Servers)

	ss := h.House.Servers("")
	require.Len(t, ss, 2)
	assert.Equal(t, "atlas", ss[0].ID)
	assert.Equal(t, []protocol.GPUCount{{Model: "A100", MemoryMiB: 81920, Count: 2}}, ss[0].GPUs)
	require.NotNil(t, ss[0].Runs)
	assert.Equal(t, protocol.RunnerSynthetic, ss[0].Runs.Runner)
	assert.Empty(t, h.House.Servers("EUR"))
}
