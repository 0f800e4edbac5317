package console

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/bidder"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/internal/clocktest"
	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/protocol"
)

// marketAt is CRED's market data at at: H100s with contracts settled at
// three prices and an offer waiting, and L4s with none.
func marketAt(at time.Time, h100Free int, model string) protocol.Market {
	d := decimal.RequireFromString
	return protocol.Market{Currency: "CRED", Scale: 2, At: at, Window: contract.Duration(time.Hour), Every: contract.Duration(5 * time.Second),
		Models: []protocol.MarketModel{
			{Model: model, Settled: 3, Used: d("7200.4"), Charged: d("9.90"), GPUs: 8, Free: h100Free,
				Prices:  &protocol.Prices{Low: d("0.0012"), Median: d("0.00135"), High: d("0.0015"), VWAP: d("0.001375")},
				Waiting: protocol.Depth{Offers: 1, GPUs: 4, Best: d("0.002")},
				Book:    h100Book()},
			{Model: "L4", Used: decimal.Zero, Charged: decimal.Zero, GPUs: 4, Free: 4},
		}}
}

// h100Book is marketAt's H100 book: asks of 3 GPUs at 0.0014 and 2 at
// 0.0016 (two servers), an offer of 4 at 0.0011.
func h100Book() *protocol.Book {
	d := decimal.RequireFromString
	p := func(s string) *decimal.Decimal { v := d(s); return &v }
	return &protocol.Book{
		Asks:    []protocol.Level{{Price: d("0.0014"), GPUs: 3, Orders: 1}, {Price: d("0.0016"), GPUs: 2, Orders: 2}},
		Bids:    []protocol.Level{{Price: d("0.0011"), GPUs: 4, Orders: 1}},
		AskGPUs: 5, BidGPUs: 4, BestAsk: p("0.0014"), BestBid: p("0.0011"), Spread: p("0.0003"), Mid: p("0.00125")}
}

// TestMarketDepthChart: the Market page draws each model's book as it
// was last published: the bids leftwards from the best bid and the asks
// rightwards from the best ask, summed level by level, each level's
// figures on its step, the best of each side, spread and mid above; a
// model with no book says so.
func TestMarketDepthChart(t *testing.T) {
	clock := clocktest.New(time.Date(2026, 11, 25, 14, 0, 0, 0, time.UTC))
	h := NewMarketHistory(0, clock.Now)
	b := marketConsole(t, h, clock)
	h.Add(marketAt(clock.Now(), 4, "H100"))
	_, page := b.get("/market")
	svg := regexp.MustCompile(`(?s)<svg class="chart depth" role="img" aria-label="depth of H100 in CRED".*?</svg>`).FindString(page)
	require.NotEmpty(t, svg, page)
	// Per GPU-hour, as every price on the page: 3600 times the wire's, at
	// CRED's places (the mid was 4.5, beside 3.96).
	assert.Contains(t, svg, "per GPU-hour: best bid 3.96 · best ask 5.04 · spread 1.08 · mid 4.50")
	assert.Contains(t, svg, `<polygon class="bids"`)
	assert.Contains(t, svg, `<polygon class="asks"`)
	var steps []string
	for _, m := range regexp.MustCompile(`<line class="step (\w+)" x1="([\d.]+)" y1="([\d.]+)" x2="([\d.]+)" y2="([\d.]+)"><title>([^<]*)</title>`).FindAllStringSubmatch(svg, -1) {
		steps = append(steps, m[1]+": "+m[6])
	}
	assert.Equal(t, []string{
		"bids: bids at 3.96: 4 GPUs, 4 in all to here (1 offer)",
		"asks: asks at 5.04: 3 GPUs, 3 in all to here (1 ask)",
		"asks: asks at 5.76: 2 GPUs, 5 in all to here (2 asks)",
	}, steps)
	// The deepest side reaches the top; the asks' second step is higher
	// than their first, and right of it.
	ys := regexp.MustCompile(`<line class="step asks" x1="([\d.]+)" y1="([\d.]+)"`).FindAllStringSubmatch(svg, -1)
	require.Len(t, ys, 2)
	f := func(s string) float64 { v, err := strconv.ParseFloat(s, 64); require.NoError(t, err); return v }
	assert.Less(t, f(ys[1][2]), f(ys[0][2]), "higher on the page: a smaller y")
	assert.Greater(t, f(ys[1][1]), f(ys[0][1]))
	top := regexp.MustCompile(`<line x1="64" y1="(\d+)" x2="64" y2="\d+" class="axis"/>`).FindStringSubmatch(svg)
	require.NotNil(t, top, "the y axis")
	assert.Equal(t, f(top[1]), f(ys[1][2]), "at the top of the plot")
	l4 := regexp.MustCompile(`(?s)<svg class="chart depth" role="img" aria-label="depth of L4 in CRED".*?</svg>`).FindString(page)
	assert.Contains(t, l4, "no server asks with GPUs free, no offer waiting")
}

// marketConsole serves a console on a manual clock that follows h.
func marketConsole(t *testing.T, h *MarketHistory, clock *clocktest.Clock) *browser {
	cfg, _, _ := testConfig(t)
	cfg.Now, cfg.Market = clock.Now, h
	srv, _ := serve(t, cfg)
	b := newBrowser(t, srv)
	b.login("vic")
	return b
}

// TestMarketPage: market data published on a real NATS server reaches the
// Market page, which a viewer sees, through the subscription the console
// is fed by: its figures in the table, one format a column, its prices
// and GPUs drawn over time, and the table as CSV.
func TestMarketPage(t *testing.T) {
	ns := natstest.Start(t)
	pub, sub := natstest.Connect(t, ns, ""), natstest.Connect(t, ns, "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clock := clocktest.New(time.Date(2026, 11, 25, 14, 0, 0, 0, time.UTC))
	h := NewMarketHistory(0, clock.Now)
	ch, err := bidder.SubscribeMarket(ctx, sub, "")
	require.NoError(t, err)
	go h.Follow(ctx, ch)
	b := marketConsole(t, h, clock)

	_, page := b.get("/market")
	assert.Contains(t, page, `<a href="/market" class="here">Market</a>`, "in the nav")
	assert.Contains(t, page, "No market data has come yet")

	start := clock.Now()
	for i, free := range []int{6, 5, 3} {
		body, err := protocol.Marshal(marketAt(start.Add(time.Duration(i)*5*time.Second), free, "H100"))
		require.NoError(t, err)
		require.NoError(t, pub.Publish(protocol.MarketSubject("CRED"), body))
		require.Eventually(t, func() bool { return len(h.snapshots()["CRED"]) == i+1 }, 5*time.Second, 10*time.Millisecond, "publication %d", i)
		clock.Advance(5 * time.Second)
	}
	clock.Advance(-3 * time.Second) // 2 s after the last came

	code, page := b.get("/market")
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, page, `<body data-refresh="5">`, "live: every 5 s, not the lists' 30")
	assert.Contains(t, page, "Published at 2026-11-25 14:00:10 (UTC): contracts settled in the last 1h0m0s")
	assert.Contains(t, page, "last update <span class=\"ago\">2 s ago</span>, every 5s; 3 publications kept")
	assert.NotContains(t, page, "Stale")
	row := regexp.MustCompile(`<tr><td class="model">H100</td>.*</tr>`).FindString(page)
	cells := regexp.MustCompile(`<td class="num[^"]*">([^<]*)</td>`).FindAllStringSubmatch(row, -1)
	var got []string
	for _, c := range cells {
		got = append(got, c[1])
	}
	// Every price of the table per GPU-hour at the currency's places, the
	// money charged at its scale.
	assert.Equal(t, []string{"3", "7200", "9.90", "4.32", "4.86", "5.40", "4.95", "8", "3", "1", "4", "7.20"}, got)
	assert.Regexp(t, `<td class="model">L4</td><td class="num">0</td><td class="num">0</td><td class="num">0.00</td><td class="num low">-</td>`, page)
	for _, chart := range []string{"prices per GPU-hour of H100 in CRED", "GPUs of H100 in CRED"} {
		svg := regexp.MustCompile(`(?s)<svg class="chart" role="img" aria-label="` + regexp.QuoteMeta(chart) + `".*?</svg>`).FindString(page)
		require.NotEmpty(t, svg, chart)
		lines := regexp.MustCompile(`<polyline class="line s\d" points="([^"]*)"`).FindAllStringSubmatch(svg, -1)
		require.Len(t, lines, 2, "%s: two lines", chart)
		assert.Len(t, strings.Fields(lines[0][1]), 3, "%s: a point a publication", chart)
	}
	assert.Contains(t, page, `<polygon class="band"`, "the low–high band")
	assert.Contains(t, page, "no contract settled in the window has paid for use yet", "L4's prices")
	assert.Contains(t, page, `href="/csv/market"`)

	code, _, recs := b.csvOf("/csv/market")
	require.Equal(t, http.StatusOK, code)
	require.Len(t, recs, 3)
	assert.Equal(t, []string{"currency", "at", "model", "settled", "gpu_seconds_used", "charged", "low_per_gpu_hour", "median_per_gpu_hour", "high_per_gpu_hour", "vwap_per_gpu_hour", "gpus", "free", "waiting", "waiting_gpus", "best_waiting_per_gpu_hour"}, recs[0])
	assert.Equal(t, []string{"CRED", "2026-11-25T14:00:10Z", "H100", "3", "7200", "9.90", "4.32", "4.86", "5.40", "4.95", "8", "3", "1", "4", "7.20"}, recs[1])
	assert.Equal(t, []string{"CRED", "2026-11-25T14:00:10Z", "L4", "0", "0", "0.00", "", "", "", "", "4", "4", "0", "0", ""}, recs[2])
}

// TestMarketStale: on the console's clock, market data is stale once
// three of its intervals pass with nothing new, and fresh again when a
// publication comes.
func TestMarketStale(t *testing.T) {
	clock := clocktest.New(time.Date(2026, 11, 25, 14, 0, 0, 0, time.UTC))
	h := NewMarketHistory(0, clock.Now)
	b := marketConsole(t, h, clock)
	h.Add(marketAt(clock.Now(), 4, "H100"))
	clock.Advance(15 * time.Second)
	_, page := b.get("/market")
	assert.Contains(t, page, "15 s ago")
	assert.NotContains(t, page, "Stale", "three intervals, not more")
	clock.Advance(time.Second)
	_, page = b.get("/market")
	assert.Contains(t, page, `<p class="stale" role="alert" id="stale-CRED">Stale: the last market data of CRED came 16 s ago, and it should come every 5s (stale after 15s).`)
	h.Add(marketAt(clock.Now(), 4, "H100"))
	_, page = b.get("/market")
	assert.NotContains(t, page, "Stale")
	assert.Contains(t, page, "0 s ago")
}

// TestMarketHistoryBounded: a history keeps the last publications of each
// currency up to its limit, in order, none twice, and so many currencies.
func TestMarketHistoryBounded(t *testing.T) {
	h := NewMarketHistory(3, nil)
	t0 := time.Date(2026, 11, 25, 14, 0, 0, 0, time.UTC)
	for i := range 10 {
		h.Add(marketAt(t0.Add(time.Duration(i)*time.Second), i, "H100"))
	}
	h.Add(marketAt(t0.Add(9*time.Second), 99, "H100")) // the same again, from a second instance
	h.Add(marketAt(t0.Add(2*time.Second), 99, "H100")) // late
	s := h.snapshots()["CRED"]
	require.Len(t, s, 3)
	for i, want := range []int{7, 8, 9} {
		assert.Equal(t, want, s[i].Models[0].Free, "publication %d", i)
	}
	for i := range 2 * maxMarketCurrencies {
		m := marketAt(t0, 1, "H100")
		m.Currency = fmt.Sprintf("C%02d", i)
		h.Add(m)
	}
	assert.Len(t, h.snapshots(), maxMarketCurrencies, "CRED and the first 31 others")
	for _, unit := range []string{"GPU-CAP", "SPEND-CRED"} {
		h := NewMarketHistory(0, nil)
		m := marketAt(t0, 1, "H100")
		m.Currency = unit
		h.Add(m)
		assert.Empty(t, h.snapshots(), "%s counts caps: nothing is traded in it", unit)
	}
	assert.Len(t, NewMarketHistory(0, nil).snapshots(), 0)
	assert.Equal(t, MarketSnapshots, NewMarketHistory(0, nil).limit)
}

// TestMarketNoNATS: a console given no market data says so plainly, and
// has no market table to export.
func TestMarketNoNATS(t *testing.T) {
	srv, _, _ := testConsole(t)
	b := newBrowser(t, srv)
	b.login("ann")
	code, page := b.get("/market")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, page, `This console follows no market data: it was started without a NATS connection`)
	assert.Contains(t, page, `<a href="/market" class="here">Market</a>`)
	code, _, _ = b.csvOf("/csv/market")
	assert.Equal(t, http.StatusNotFound, code)
}

// TestMarketHostileModel: a server may announce any model: on the page
// it is text, in the charts too, and in the CSV no formula.
func TestMarketHostileModel(t *testing.T) {
	clock := clocktest.New(time.Date(2026, 11, 25, 14, 0, 0, 0, time.UTC))
	h := NewMarketHistory(0, clock.Now)
	b := marketConsole(t, h, clock)
	script, formula := `<script>alert(1)</script>`, `=HYPERLINK("http://evil.example/","x")`
	for i := range 2 {
		m := marketAt(clock.Now(), i, script)
		m.Models = append(m.Models, protocol.MarketModel{Model: formula, GPUs: 1})
		h.Add(m)
		clock.Advance(5 * time.Second)
	}
	_, page := b.get("/market")
	assert.NotContains(t, page, "<script>alert")
	assert.Contains(t, page, `<td class="model">&lt;script&gt;alert(1)&lt;/script&gt;</td>`)
	assert.Contains(t, page, `aria-label="prices per GPU-hour of &lt;script&gt;alert(1)&lt;/script&gt; in CRED"`)
	assert.Contains(t, page, `aria-label="depth of &lt;script&gt;alert(1)&lt;/script&gt; in CRED"`, "its book drawn too")
	assert.Contains(t, page, `<text x="64" y="16" class="title">depth of &lt;script&gt;alert(1)&lt;/script&gt; in CRED</text>`)
	_, _, recs := b.csvOf("/csv/market")
	require.Len(t, recs, 4)
	assert.Equal(t, script, recs[1][2])
	assert.Equal(t, `'`+formula, recs[3][2])
}
