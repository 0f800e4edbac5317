package natsvc_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/bidder"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/pricing"
	"github.com/bourse/bourse/protocol"
)

// TestMarketData: with two exchange instances on one store, the market
// data counts each contract once (it is read from the store, and one
// instance publishes), with the prices of the contracts made, the GPUs
// registered and free, and no client's name.
func TestMarketData(t *testing.T) {
	m := newMarket(t, func(c *exchange.Config) { c.MarketEvery = 100 * time.Millisecond })
	m.startExchange() // a second instance on the same store
	m.wallet("alice", "100")
	m.wallet("bob", "100")
	srv := m.scriptedServer("gpu1", 4, accept)
	srv.beat()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reader := natstest.Connect(t, m.ns, "")
	feed, err := bidder.SubscribeMarket(ctx, reader, cred)
	require.NoError(t, err)

	// Three contracts at 0.01, 0.02 and 0.04 a GPU-second: one GPU for
	// 10 minutes (600 GPU-seconds), two for 10 minutes (1200), one for 5
	// (300).
	for i, o := range []struct {
		client, price string
		gpus          int
		limit         time.Duration
	}{{"alice", "0.01", 1, 10 * time.Minute}, {"bob", "0.02", 2, 10 * time.Minute}, {"alice", "0.04", 1, 5 * time.Minute}} {
		tm := terms(o.client)
		tm.GPUs, tm.TimeLimit, tm.P = o.gpus, o.limit, pricing.Flat(dectest.D(o.price))
		tm.Prepayment = tm.CappedPrepayment(2)
		reply, err := m.client(o.client).Offer(ctx, "md-"+o.price, tm)
		require.NoError(t, err, "offer %d", i)
		require.NotNil(t, reply.Contract, "offer %d: %+v", i, reply)
	}

	var got protocol.Market
	deadline := time.After(10 * time.Second)
	for seen := 0; seen < 5; {
		select {
		case got = <-feed:
		case <-deadline:
			t.Fatalf("no market data with the three contracts; last %+v", got)
		}
		if len(got.Models) == 1 && got.Models[0].Contracts > 0 {
			require.Equal(t, 3, got.Models[0].Contracts, "each contract once, whichever instance publishes: %+v", got)
			seen++
		}
	}
	assert.Equal(t, cred, got.Currency)
	assert.Equal(t, int32(2), got.Scale)
	assert.Equal(t, time.Hour, time.Duration(got.Window))
	h := got.Models[0]
	assert.Equal(t, "H100", h.Model)
	assert.True(t, h.GPUSeconds.Equal(dectest.D("2100")), "%s", h.GPUSeconds)
	require.NotNil(t, h.Prices)
	assert.True(t, h.Prices.Low.Equal(dectest.D("0.01")), "low %s", h.Prices.Low)
	assert.True(t, h.Prices.Median.Equal(dectest.D("0.02")), "median %s", h.Prices.Median)
	assert.True(t, h.Prices.High.Equal(dectest.D("0.04")), "high %s", h.Prices.High)
	// (0.01·600 + 0.02·1200 + 0.04·300) / 2100 = 42/2100 = 0.02
	assert.True(t, h.Prices.VWAP.Equal(dectest.D("0.02")), "vwap %s", h.Prices.VWAP)
	assert.Equal(t, 4, h.GPUs)
	assert.Equal(t, 4, h.Free, "as the heartbeats say")
	body, err := protocol.Marshal(got)
	require.NoError(t, err)
	assert.NotContains(t, string(body), "alice")
	assert.NotContains(t, string(body), "bob")
}
