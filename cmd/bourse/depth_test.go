package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/market/markettest"
	"github.com/bourse/bourse/protocol"
)

// TestMarketDepthCommand: `bourse market --depth` on a market of two
// servers asking 0.30 and 0.40, an offer waiting at 0.20 and a contract
// settled at 0.35: the table has a line per price level, dearest first,
// with the GPUs asked and wanted, the best of each side, spread, mid and
// last trade, and no party; --json has the book whole.
func TestMarketDepthCommand(t *testing.T) {
	d := decimal.RequireFromString
	b := startBidMarket(t, markettest.PostedH100s("atlas", 16, d("0.30")), markettest.PostedH100s("boreal", 8, d("0.40")))
	k := b.offerJSON("ada", "--gpus", "2", "--model", "H100", "--price", "0.35", "--time-limit", "1m", "--duration", "1s")
	assert.Equal(t, "atlas", k.Server)
	b.ok("bob", "offer", "--gpus", "3", "--model", "H100", "--price", "0.20", "--time-limit", "1m", "--wait", "10m")

	market := func(args ...string) string {
		var out, errOut bytes.Buffer
		code := run(context.Background(), append([]string{"market", "--nats", b.m.URL(), "--currency", "CRED"}, args...), &out, &errOut)
		require.Equal(t, 0, code, "bourse market: %s", errOut.String())
		return out.String()
	}
	// Until ada's contract has settled and atlas's GPUs are free again.
	var h protocol.MarketModel
	for deadline := time.Now().Add(30 * time.Second); ; {
		var ms []protocol.Market
		require.NoError(t, json.Unmarshal([]byte(market("--depth", "--json")), &ms))
		require.Len(t, ms, 1)
		require.NotEmpty(t, ms[0].Models)
		h = ms[0].Models[0]
		if h.Last != nil && h.Book != nil && h.Book.AskGPUs == 24 {
			break
		}
		require.True(t, time.Now().Before(deadline), "no settled contract and free GPUs in the market data: %+v", h)
	}
	require.NotNil(t, h.Book)
	bk := *h.Book
	assert.Equal(t, []protocol.Level{{Price: d("0.3"), GPUs: 16, Orders: 1}, {Price: d("0.4"), GPUs: 8, Orders: 1}}, normal(bk.Asks))
	assert.Equal(t, []protocol.Level{{Price: d("0.2"), GPUs: 3, Orders: 1}}, normal(bk.Bids))
	assert.True(t, bk.BestAsk.Equal(d("0.3")) && bk.BestBid.Equal(d("0.2")), "%+v", bk)
	assert.True(t, bk.Spread.Equal(d("0.1")) && bk.Mid.Equal(d("0.25")), "%+v", bk)
	assert.True(t, h.Last.Price.Equal(d("0.35")), "%+v", h.Last)

	out := market("--depth")
	assert.True(t, strings.HasPrefix(out, "CRED at "), "%s", out)
	// Per GPU-hour, at CRED's places.
	assert.Contains(t, out, "H100: best ask 1080.00, best bid 720.00, spread 360.00, mid 900.00; asks 24 GPUs, bids 3 GPUs in all; last trade 1260.00 at ")
	assert.Contains(t, out, "PRICE/GPU-H  ASK GPUS  ASKS  BID GPUS  OFFERS\n")
	assert.Regexp(t, `(?m)^1440\.00 +8 +1\s*\n1080\.00 +16 +1\s*\n720\.00 +3 +1\n`, out, "dearest first, asks above bids")
	for _, party := range []string{"ada", "bob", "atlas", "boreal"} {
		assert.NotContains(t, out, party)
	}
}

// normal is levels with their prices as decimal.RequireFromString reads
// them, for assert.Equal.
func normal(ls []protocol.Level) []protocol.Level {
	out := []protocol.Level{}
	for _, l := range ls {
		l.Price = decimal.RequireFromString(l.Price.String())
		out = append(out, l)
	}
	return out
}

// TestPrintDepth: a crossed book prints both sides on the line of the
// price they share; levels that differ in their last place print apart;
// a model's name that would forge a line is escaped; a model with no
// book says so.
func TestPrintDepth(t *testing.T) {
	d := decimal.RequireFromString
	p := func(s string) *decimal.Decimal { v := d(s); return &v }
	var b strings.Builder
	require.NoError(t, printDepth(&b, []protocol.Market{{Currency: "CRED", Scale: 2, Models: []protocol.MarketModel{
		{Model: "H100\nCRED at 2000-01-01: forged", Book: &protocol.Book{
			Asks:    []protocol.Level{{Price: d("0.00033334"), GPUs: 3, Orders: 1}, {Price: d("0.5"), GPUs: 4, Orders: 2}},
			Bids:    []protocol.Level{{Price: d("0.5"), GPUs: 1, Orders: 1}, {Price: d("0.00033333"), GPUs: 2, Orders: 1}},
			AskGPUs: 7, BidGPUs: 3, BestAsk: p("0.00033334"), BestBid: p("0.5"), Spread: p("-0.49966666"), Mid: p("0.25016667")}},
		{Model: "L4"},
	}}}))
	out := b.String()
	// Per GPU-hour: 3600 times the wire's prices, exactly.
	assert.Contains(t, out, `H100\x0aCRED at 2000-01-01: forged: best ask 1.200024, best bid 1800.000000, spread -1798.799976, mid 900.600012`)
	assert.NotRegexp(t, `(?m)^CRED at 2000`, out)
	assert.Regexp(t, `(?m)^1800\.000000 +4 +2 +1 +1\n1\.200024 +3 +1\s*\n1\.199988 +2 +1\n`, out)
	assert.Contains(t, out, "L4: best ask -, best bid -")
	assert.Contains(t, out, "no asks with GPUs free, no offers waiting")

	// A last trade at an odd price (a charge over the GPU-seconds used)
	// is at CRED's places, and leaves the levels at theirs.
	b.Reset()
	require.NoError(t, printDepth(&b, []protocol.Market{{Currency: "CRED", Scale: 2, Models: []protocol.MarketModel{
		{Model: "H100", Last: &protocol.Trade{Price: d("0.12444444")}, Book: &protocol.Book{
			Asks: []protocol.Level{{Price: d("0.15"), GPUs: 4, Orders: 1}}, AskGPUs: 4, BestAsk: p("0.15")}},
	}}}))
	assert.Contains(t, b.String(), "H100: best ask 540.00, best bid -, spread -, mid -; asks 4 GPUs, bids 0 GPUs in all; last trade 448.00 at ")
	assert.Regexp(t, `(?m)^540\.00 +4 +1`, b.String())
}
