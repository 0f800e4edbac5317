package console

import (
	"context"
	"fmt"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/exchange/memstore"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/treasury"
)

// settle records contracts of alice's accepted at the times given, each
// 100 GPU-seconds for its charge.
func settle(t testing.TB, store *memstore.Store, at []time.Time, charges []string) {
	t.Helper()
	ctx := context.Background()
	for i, when := range at {
		k := contract.Contract{ID: fmt.Sprintf("k%d-%d", when.Unix(), i), Client: "alice", Server: "atlas", State: contract.StateAccepted, AcceptedAt: when,
			Terms: contract.Terms{Client: "alice", Currency: "CRED", GPUs: 1}}
		_, _, err := store.Open(ctx, k, "")
		require.NoError(t, err)
		_, err = store.Update(ctx, k.ID, func(c *contract.Contract) ([]currency.Op, error) {
			c.State, c.Charge, c.Reading = contract.StateSettled, decimal.RequireFromString(charges[i%len(charges)]), &contract.Reading{Contract: c.ID, U: decimal.NewFromInt(100)}
			return nil, nil
		})
		require.NoError(t, err)
	}
}

// consoleAt serves a console whose clock reads at, over testConfig's
// ledger and contract store.
func consoleAt(t testing.TB, at time.Time) (*httptest.Server, Config, *treasury.Treasury, *memstore.Store) {
	cfg, tr, store := testConfigOn(t, func() time.Time { return at })
	srv, _ := serve(t, cfg)
	return srv, cfg, tr, store
}

var priceChartRE = regexp.MustCompile(`(?s)<svg class="chart" role="img" aria-label="average price of a GPU-hour[^"]*".*?</svg>`)

// TestReportPriceChart: a market of one day draws its prices by the hour,
// not one point on an axis from a moment to itself; a market of one
// minute, and one with nothing ended, say why there is no line.
func TestReportPriceChart(t *testing.T) {
	day := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	chart := func(at []time.Time) string {
		t.Helper()
		srv, _, _, store := consoleAt(t, day.Add(23*time.Hour))
		settle(t, store, at, []string{"0.2", "0.3"})
		b := newBrowser(t, srv)
		b.login("vic")
		_, page := b.get("/report")
		svg := priceChartRE.FindString(page)
		require.NotEmpty(t, svg, "the price chart")
		return svg
	}

	var hours []time.Time
	for h := 9; h <= 21; h++ {
		hours = append(hours, day.Add(time.Duration(h)*time.Hour+15*time.Minute))
	}
	svg := chart(hours)
	assert.Contains(t, svg, "average price of a GPU-hour, by the hour")
	m := regexp.MustCompile(`<polyline class="line s0" points="([^"]+)"`).FindStringSubmatch(svg)
	require.NotNil(t, m, "a line")
	assert.Len(t, strings.Fields(m[1]), 13, "a point an hour")
	assert.Contains(t, svg, ">11-25 09:00<", "the axis starts at the first hour")
	assert.Contains(t, svg, ">11-25 21:00<", "and ends at the last")
	assert.Contains(t, svg, ">10.80<", "the highest price, 0.3 for 100 GPU-seconds, per GPU-hour")

	svg = chart([]time.Time{day.Add(10 * time.Hour), day.Add(10*time.Hour + 20*time.Second)})
	assert.NotContains(t, svg, "<polyline")
	assert.Contains(t, svg, "one moment only, no line to draw: CRED per GPU-hour 9 at 2026-11-25 10:00")

	svg = chart(nil)
	assert.NotContains(t, svg, "<polyline")
	assert.Contains(t, svg, "no contract ended in these days: no price to draw")
}

// TestReportCapacityFromMarket: the report counts servers' idle time with
// the GPUs the market data says they have (the Market page's figures),
// unless the form gives others; without market data it says what to do.
func TestReportCapacityFromMarket(t *testing.T) {
	day := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	now := day.Add(8 * time.Hour)
	cfg, tr, store := testConfigOn(t, func() time.Time { return now })
	_, err := tr.OpenRevenue(context.Background(), "root", "CRED", "atlas", "hello-atlas") // its first hello, at 08:00
	require.NoError(t, err)
	now = day.Add(23 * time.Hour)
	settle(t, store, []time.Time{day.Add(9 * time.Hour), day.Add(10 * time.Hour)}, []string{"0.2"})
	cfg.Market = NewMarketHistory(0, nil)
	cfg.Market.Add(protocol.Market{Currency: "CRED", Scale: 2, At: day.Add(22 * time.Hour), Servers: []protocol.MarketServer{{ID: "atlas", GPUs: 8, Free: 3}}})
	srv, _ := serve(t, cfg)
	b := newBrowser(t, srv)
	b.login("vic")

	_, page := b.get("/report")
	assert.Contains(t, page, "utilisation, % of each server")
	assert.Contains(t, page, `placeholder="atlas=8"`)
	assert.Contains(t, page, "the market data said at 2026-11-25 22:00:00 (atlas=8, the Market page's)")
	assert.Regexp(t, `<td>atlas</td><td class="num">2</td><td class="num">200\.0</td><td class="num">[^<]+</td><td class="num">\d+</td>`, page, "idle GPU-seconds counted")

	_, page = b.get("/report?capacity=atlas%3D4")
	assert.Contains(t, page, "Idle GPU-seconds of the servers' GPUs given above.")

	cfg.Market = nil
	bare, _ := serve(t, cfg)
	nb := newBrowser(t, bare)
	nb.login("vic")
	_, page = nb.get("/report")
	assert.NotContains(t, page, "utilisation, %")
	assert.Contains(t, page, "the market data names none yet")
}
