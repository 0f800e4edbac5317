package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/bidder/strategy"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/market"
	"github.com/bourse/bourse/market/markettest"
	"github.com/bourse/bourse/scenario"
)

var _ strategy.Strategy = (*median)(nil)

// TestTrade runs the agent against the demo's servers, with only ada
// bidding.
func TestTrade(t *testing.T) {
	ctx := context.Background()
	m := markettest.Start(t, market.Config{Clients: []scenario.ClientSpec{}})
	m.Fund("CRED", decimal.NewFromInt(30), "ada")

	var out bytes.Buffer
	require.NoError(t, runJobs(ctx, m.URL(), "ada", 3, 300*time.Millisecond, &out))
	t.Log(out.String())
	assert.Equal(t, 3, strings.Count(out.String(), "settled (completed)"), "%s", out.String())
}

// TestMedianBidsTheMedian checks the strategy alone: half the value at
// first, then the median counter-offer, never beyond the value.
func TestMedianBidsTheMedian(t *testing.T) {
	now := time.Now()
	j := strategy.Job{Currency: "CRED", Scale: 2, GPUs: 1, Runtime: time.Second, Utilization: decimal.NewFromInt(1), Value: decimal.RequireFromString("0.40")}
	m := &median{}
	price := func(rejected int) string { return m.Bid(j, rejected, now).P[0].Y.String() }
	assert.Equal(t, "0.2", price(0))
	var ks []contract.Counter
	for _, p := range []string{"0.5", "0.3", "0.35"} {
		tm := m.Bid(j, 0, now)
		tm.P = contract.Flat(decimal.RequireFromString(p))
		ks = append(ks, contract.Counter{ID: p, Server: "s", Terms: tm, ValidUntil: now.Add(time.Minute)})
	}
	took := m.Take(j, ks, now)
	require.NotNil(t, took)
	assert.Equal(t, "0.3", took.ID, "the cheapest within the value")
	assert.Equal(t, "0.35", price(0), "the median of 0.3, 0.35 and 0.5")
	assert.Equal(t, "0.4", price(9), "never beyond the value")
}
