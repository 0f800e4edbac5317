package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/protocol"
)

// TestBidQuoteAndMarket: through the command alone, a quote hears atlas's
// answer and holds nothing, and `bourse market` shows what the contract
// paid for what it used once it has settled, and the GPUs.
func TestBidQuoteAndMarket(t *testing.T) {
	b := startBidMarket(t)
	// What the exchange delivers to servers: a quote is answered from
	// their asks, and delivers nothing.
	nc, err := nats.Connect(b.m.URL())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	delivered := make(chan *nats.Msg, 64)
	_, err = nc.ChanSubscribe(protocol.DeliverSubject("*", "*"), delivered)
	require.NoError(t, err)
	require.NoError(t, nc.Flush())
	var q protocol.QuoteReply
	require.NoError(t, json.Unmarshal([]byte(b.ok("ada", "--json", "quote", "--gpus", "2", "--model", "H100", "--price", "0.20", "--time-limit", "1m")), &q))
	assert.Empty(t, q.Accepts)
	require.Len(t, q.Counters, 1, "%+v", q)
	assert.Equal(t, "atlas", q.Counters[0].Server)
	out := b.ok("ada", "quote", "--gpus", "2", "--model", "H100", "--price", "0.40", "--time-limit", "1m")
	assert.Contains(t, out, "Would accept now: atlas")
	bal := b.ok("ada", "--json", "balance")
	assert.Contains(t, bal, `"held": "0.00"`, "a quote holds nothing, and JSON writes money at its scale: %s", bal)
	require.NoError(t, nc.Flush()) // NATS answers it after the deliveries before it
	assert.Empty(t, delivered, "bid quote delivered to a server")

	k := b.offerJSON("ada", "--gpus", "2", "--model", "H100", "--price", "0.35", "--time-limit", "1m", "--duration", "2s")
	assert.Equal(t, "atlas", k.Server)

	market := func(args ...string) string {
		var out, errOut bytes.Buffer
		code := run(context.Background(), append([]string{"market", "--nats", b.m.URL()}, args...), &out, &errOut)
		require.Equal(t, 0, code, "bourse market: %s", errOut.String())
		return out.String()
	}
	var ms []protocol.Market
	for {
		require.NoError(t, json.Unmarshal([]byte(market("--currency", "CRED", "--json")), &ms))
		require.Len(t, ms, 1)
		if len(ms[0].Models) > 0 && ms[0].Models[0].Settled > 0 {
			break
		}
	}
	h := ms[0].Models[0]
	assert.Equal(t, "H100", h.Model)
	assert.Equal(t, 1, h.Settled)
	assert.True(t, h.Prices.Median.Equal(decimal.RequireFromString("0.35")), "%+v", h.Prices)
	assert.Equal(t, 16, h.GPUs)
	// --auto going bids the median paid per GPU-second used: 0.35.
	g := b.offerJSON("bob", "--gpus", "1", "--model", "H100", "--auto", "going", "--value", "0.50", "--time-limit", "1m", "--duration", "10s")
	assert.Equal(t, "0.35", g.Terms.P.Eval(decimal.Zero).String(), "the going rate")

	// A currency the market has not is told as such within a round of
	// publications, not after --wait as if no exchange ran.
	var nopeOut, errOut bytes.Buffer
	code := run(context.Background(), []string{"market", "--nats", b.m.URL(), "--currency", "NOPE", "--wait", "1m"}, &nopeOut, &errOut)
	assert.Equal(t, exitRefused, code, errOut.String())
	assert.Contains(t, errOut.String(), `no currency "NOPE" on this market: its exchange publishes CRED (code unknown_currency)`)

	table := market()
	assert.True(t, strings.HasPrefix(table, "CRED at "), "%s", table)
	assert.Contains(t, table, "H100")
	assert.NotContains(t, table, "ada")
}

// TestPrintMarketAligned: a currency's prices print per GPU-hour (the
// wire's per GPU-second, times 3600) with its decimal places, all alike
// so that a column lines up, more only where a price would keep fewer
// than two significant digits; charged is money at the scale; every
// column says what it counts.
func TestPrintMarketAligned(t *testing.T) {
	d := decimal.RequireFromString
	var b strings.Builder
	require.NoError(t, printMarket(&b, []protocol.Market{{Currency: "CRED", Scale: 2, Models: []protocol.MarketModel{
		{Model: "H100", Settled: 2, Used: d("41"), Charged: d("16.5"), Prices: &protocol.Prices{Low: d("0.3"), Median: d("0.4"), High: d("0.5"), VWAP: d("0.40243902")}},
		{Model: "L4", Waiting: protocol.Depth{Offers: 1, Best: d("0.1")}},
	}}}))
	out := b.String()
	assert.Contains(t, out, "MODEL  CONTRACTS  GPU-S USED  CHARGED CRED  LOW CRED/GPU-H  MEDIAN   HIGH     VWAP     GPUS  FREE  WAITING OFFERS  WAITING GPUS  BEST WAITING PRICE\n")
	assert.Regexp(t, `(?m)^H100 +2 +41 +16\.50 +1080\.00 +1440\.00 +1800\.00 +1448\.78 +0 +0 +0 +0 +-$`, out)
	assert.Regexp(t, `(?m)^L4 +0 +0 +0\.00 +- +- +- +- +0 +0 +1 +0 +360\.00$`, out, "the waiting offers' best price too")

	b.Reset()
	require.NoError(t, printMarket(&b, []protocol.Market{{Currency: "CRED", Scale: 2, Models: []protocol.MarketModel{
		{Model: "H100", Settled: 1, Prices: &protocol.Prices{Low: d("0.000001"), Median: d("0.0042"), High: d("0.3"), VWAP: d("0.004213")}},
	}}}))
	assert.Regexp(t, `(?m)^H100 +1 +0 +0\.00 +0\.0036 +15\.1200 +1080\.0000 +15\.1668 `, b.String(), "two significant digits of the cheapest")
}

// TestWatchMarketRedraws: on a terminal --watch redraws the screen with
// every currency's latest publication at each one that comes (as
// watch(1) does); elsewhere it prints each below the last, once.
func TestWatchMarketRedraws(t *testing.T) {
	at := func(s int) time.Time { return time.Date(2026, 12, 1, 10, 0, s, 0, time.Local) }
	pubs := []protocol.Market{{Currency: "EUR", Scale: 2, At: at(2)}, {Currency: "CRED", Scale: 2, At: at(3)}}
	first := []protocol.Market{{Currency: "CRED", Scale: 2, At: at(1)}}
	watch := func(redraw bool) string {
		ch := make(chan protocol.Market, len(pubs))
		for _, m := range pubs {
			ch <- m
		}
		close(ch)
		var out bytes.Buffer
		require.NoError(t, watchMarket(context.Background(), &out, ch, "", false, false, redraw, first))
		return out.String()
	}

	screens := strings.Split(watch(true), clearScreen)
	require.Len(t, screens, 3, "a screen a publication, each from the top")
	last := screens[2]
	assert.Contains(t, last, "CRED at 2026-12-01 10:00:03")
	assert.Contains(t, last, "EUR at 2026-12-01 10:00:02", "the other currency's latest stays on the screen")
	assert.NotContains(t, last, "10:00:01")
	assert.Less(t, strings.Index(last, "CRED at"), strings.Index(last, "EUR at"), "currencies in order")

	scroll := watch(false)
	assert.NotContains(t, scroll, clearScreen)
	assert.Equal(t, 1, strings.Count(scroll, "EUR at"))
	assert.Equal(t, 1, strings.Count(scroll, "CRED at"), "the first publication was printed before the watch")
}
