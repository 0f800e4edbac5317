package natsvc_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/bidder"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/protocol"
)

// TestMarketData: with two exchange instances on one store, the market
// data counts each settled contract once (it is read from the store, and
// one instance publishes), with what they paid per GPU-second used, the
// GPUs registered and free, and no client's name; a contract that used
// nothing counts nowhere.
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

	// Four contracts at 0.01, 0.02, 0.04 and 0.5 a GPU-second, settled on
	// a second's final reading: one GPU busy (1 GPU-second), two (2), one
	// (1), and none at all.
	for i, o := range []struct {
		client, price, used string
		gpus                int
	}{{"alice", "0.01", "1", 1}, {"bob", "0.02", "2", 2}, {"alice", "0.04", "1", 1}, {"bob", "0.5", "0", 1}} {
		tm := terms(o.client)
		tm.GPUs, tm.P = o.gpus, contract.Flat(dectest.D(o.price))
		tm.Prepayment = tm.CappedPrepayment(2)
		c := m.running(m.client(o.client), tm)
		srv.publish(reading(c.ID, 1, o.used, 1, true))
		require.Equal(t, contract.StateSettled, m.settled(c.ID, 5*time.Second).State, "contract %d", i)
	}

	var got protocol.Market
	deadline := time.After(10 * time.Second)
	for seen := 0; seen < 5; {
		select {
		case got = <-feed:
		case <-deadline:
			t.Fatalf("no market data with the three contracts; last %+v", got)
		}
		if len(got.Models) == 1 && got.Models[0].Settled > 0 {
			require.Equal(t, 3, got.Models[0].Settled, "each contract once, whichever instance publishes; none that used nothing: %+v", got)
			seen++
		}
	}
	assert.Equal(t, cred, got.Currency)
	assert.Equal(t, int32(2), got.Scale)
	assert.Equal(t, time.Hour, time.Duration(got.Window))
	h := got.Models[0]
	assert.Equal(t, "H100", h.Model)
	assert.True(t, h.Used.Equal(dectest.D("4")), "%s", h.Used)
	assert.True(t, h.Charged.Equal(dectest.D("0.09")), "%s", h.Charged)
	require.NotNil(t, h.Prices)
	assert.True(t, h.Prices.Low.Equal(dectest.D("0.01")), "low %s", h.Prices.Low)
	assert.True(t, h.Prices.Median.Equal(dectest.D("0.02")), "median %s", h.Prices.Median)
	assert.True(t, h.Prices.High.Equal(dectest.D("0.04")), "high %s", h.Prices.High)
	// (0.01 + 0.04 + 0.04) / 4 GPU-seconds
	assert.True(t, h.Prices.VWAP.Equal(dectest.D("0.0225")), "vwap %s", h.Prices.VWAP)
	assert.Equal(t, 4, h.GPUs)
	assert.Equal(t, 4, h.Free, "as the heartbeats say")
	body, err := protocol.Marshal(got)
	require.NoError(t, err)
	assert.NotContains(t, string(body), "alice")
	assert.NotContains(t, string(body), "bob")
}
