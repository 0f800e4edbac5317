package console

import (
	"context"
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/caps"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/protocol"
)

// The Market page shows the market data that the exchange publishes on
// bourse.v1.market.<currency> every few seconds (protocol.Market): per
// currency and GPU model the figures of bourse market, and over time the
// prices paid per GPU-second used and the GPUs free. The console keeps what came in a
// MarketHistory, in memory, bounded; whoever runs the console feeds it
// (cmd/bourse subscribes on NATS). A console without one says it has no
// market data.

const (
	// MarketSnapshots is how many publications of each currency a
	// MarketHistory keeps by default: an hour at the exchange's 5 s.
	MarketSnapshots = 720
	// maxMarketCurrencies bounds the currencies a history keeps: one
	// more is not kept.
	maxMarketCurrencies = 32
	// maxMarketCharts bounds the models of a currency drawn over time;
	// the table lists them all.
	maxMarketCharts = 16
	// staleIntervals is how many of its intervals a currency's market
	// data may be late before the page says it is stale.
	staleIntervals = 3
	// marketRefresh is how often the Market page reloads itself, unless
	// the console's Refresh is more often (or never).
	marketRefresh = 5 * time.Second
	// defaultEvery is the interval assumed of a publication that states
	// none.
	defaultEvery = 5 * time.Second
)

// MarketHistory keeps the last publications of market data of each
// currency, in the order they were published, for the Market page. It is
// safe for concurrent use.
type MarketHistory struct {
	limit int
	now   func() time.Time
	mu    sync.Mutex
	cur   map[string][]marketSnap // oldest first
}

// marketSnap is a publication and when the console got it (by its own
// clock: the exchange's may differ).
type marketSnap struct {
	protocol.Market
	Got time.Time
}

// NewMarketHistory keeps the last limit publications of each currency
// (MarketSnapshots if limit ≤ 0), of at most 32 currencies, noting when
// each came by now (time.Now if nil).
func NewMarketHistory(limit int, now func() time.Time) *MarketHistory {
	if limit <= 0 {
		limit = MarketSnapshots
	}
	if now == nil {
		now = time.Now
	}
	return &MarketHistory{limit: limit, now: now, cur: map[string][]marketSnap{}}
}

// Add keeps m, dropping its currency's oldest publication if it has
// limit already. A publication no later than the last one of its
// currency (the same one again, from a second instance of the exchange
// for a moment, or one late) is not kept, nor one of a 33rd currency,
// nor the empty market of a caps' unit (GPU-CAP, SPEND-…), which are
// ledger currencies that nothing is traded in.
func (h *MarketHistory) Add(m protocol.Market) {
	if caps.Unit(currency.Code(m.Currency)) {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.cur[m.Currency]
	if !ok && len(h.cur) >= maxMarketCurrencies {
		return
	}
	if n := len(s); n > 0 && !m.At.After(s[n-1].At) {
		return
	}
	if len(s) >= h.limit {
		s = slices.Delete(s, 0, len(s)-h.limit+1)
	}
	h.cur[m.Currency] = append(s, marketSnap{Market: m, Got: h.now()})
}

// Follow adds each publication from ch until ch closes or ctx ends.
func (h *MarketHistory) Follow(ctx context.Context, ch <-chan protocol.Market) {
	for {
		select {
		case <-ctx.Done():
			return
		case m, ok := <-ch:
			if !ok {
				return
			}
			h.Add(m)
		}
	}
}

// Latest is the last publication of currency cur kept, if any.
func (h *MarketHistory) Latest(cur string) (protocol.Market, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.cur[cur]
	if len(s) == 0 {
		return protocol.Market{}, false
	}
	return s[len(s)-1].Market, true
}

// snapshots are the publications kept, by currency, oldest first.
func (h *MarketHistory) snapshots() map[string][]marketSnap {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string][]marketSnap, len(h.cur))
	for c, s := range h.cur {
		out[c] = slices.Clone(s)
	}
	return out
}

type marketView struct {
	// NoSource: the console was given no market data to follow.
	NoSource   bool
	Currencies []marketCurrency
}

// marketCurrency is a currency's latest publication, how old it is, and
// its history drawn.
type marketCurrency struct {
	Currency string
	At       time.Time
	Window   time.Duration
	Every    time.Duration
	// Ago is how long since it came; Stale says it is late by more than
	// staleIntervals of its intervals.
	Ago        time.Duration
	Stale      bool
	StaleAfter time.Duration
	Kept       int
	Rows       []marketRow
	Charts     []marketChart
	// Unchart is how many models are in the table but not drawn.
	Unchart int
}

// marketRow is a model's latest figures, written as the others of their
// column.
type marketRow struct {
	Model                   string
	Settled                 int
	Used, Charged           string
	Low, Median, High, VWAP string
	GPUs, Free              int
	Waiting, WaitingGPUs    int
	Best                    string
}

type marketChart struct {
	Model               string
	Prices, GPUs, Depth template.HTML
}

func (c *Console) market(_ *http.Request, v *view) error {
	v.Page, v.Title = "market", "Market"
	mv := marketView{NoSource: c.cfg.Market == nil}
	if mv.NoSource {
		v.Data = mv
		return nil
	}
	now := c.cfg.Now()
	all := c.cfg.Market.snapshots()
	codes := make([]string, 0, len(all))
	for code := range all {
		codes = append(codes, code)
	}
	slices.Sort(codes)
	for _, code := range codes {
		mv.Currencies = append(mv.Currencies, marketOf(all[code], now))
	}
	v.Data = mv
	return nil
}

// marketOf is a currency's view from its publications, oldest first.
func marketOf(snaps []marketSnap, now time.Time) marketCurrency {
	last := snaps[len(snaps)-1]
	every := time.Duration(last.Every)
	if every <= 0 {
		every = defaultEvery
	}
	mc := marketCurrency{Currency: last.Currency, At: last.At, Window: time.Duration(last.Window), Every: every,
		Ago: max(0, now.Sub(last.Got)).Round(time.Second), Kept: len(snaps)}
	mc.StaleAfter = staleIntervals * every
	mc.Stale = now.Sub(last.Got) > mc.StaleAfter
	mc.Rows = marketRows(last.Models, last.Scale)
	for i, l := range last.Models {
		if i == maxMarketCharts {
			mc.Unchart = len(last.Models) - i
			break
		}
		mc.Charts = append(mc.Charts, modelCharts(last.Currency, last.Scale, l.Model, l.Book, snaps))
	}
	return mc
}

// marketRows are a publication's models as the table shows them: every
// price (low, median, high, VWAP, the best waiting) per GPU-hour (the
// wire's per GPU-second, times 3600) at the currency's places, more only
// where one needs them for two significant digits, all alike; the money
// charged at the currency's scale; GPU-seconds used whole.
func marketRows(ls []protocol.MarketModel, scale int32) []marketRow {
	prices := protocol.HourPrices(ls)
	places := currency.PricePlaces(scale, prices...)
	next := func() string { s := prices[0].StringFixed(places); prices = prices[1:]; return s }
	rows := make([]marketRow, 0, len(ls))
	for _, l := range ls {
		r := marketRow{Model: l.Model, Settled: l.Settled, Used: l.Used.Round(0).String(), Charged: currency.Format(l.Charged, scale), Low: "-", Median: "-", High: "-", VWAP: "-",
			GPUs: l.GPUs, Free: l.Free, Waiting: l.Waiting.Offers, WaitingGPUs: l.Waiting.GPUs, Best: "-"}
		if l.Prices != nil {
			r.Low, r.Median, r.High, r.VWAP = next(), next(), next(), next()
		}
		if l.Waiting.Offers > 0 {
			r.Best = next()
		}
		rows = append(rows, r)
	}
	return rows
}

// modelCharts draws a model's prices per GPU-hour used (the median and
// VWAP of the contracts settled in each publication's window, in the band
// from the lowest to the highest) and its GPUs, registered and free, over
// the publications kept; and the depth of its book, as the last
// publication has it (depthChart).
func modelCharts(cur string, scale int32, model string, book *protocol.Book, snaps []marketSnap) marketChart {
	rng := band{Name: "low–high"}
	median, vwap := series{Name: "median"}, series{Name: "VWAP"}
	gpus, free := series{Name: "GPUs"}, series{Name: "free"}
	for _, s := range snaps {
		i := slices.IndexFunc(s.Models, func(l protocol.MarketModel) bool { return l.Model == model })
		if i < 0 {
			continue
		}
		l := s.Models[i]
		gpus.At, gpus.Y = append(gpus.At, s.At), append(gpus.Y, float64(l.GPUs))
		free.At, free.Y = append(free.At, s.At), append(free.Y, float64(l.Free))
		if p := l.Prices; p != nil {
			hour := func(d decimal.Decimal) float64 { return contract.PerHour(d).InexactFloat64() } // drawn, not counted
			rng.At, rng.Lo, rng.Hi = append(rng.At, s.At), append(rng.Lo, hour(p.Low)), append(rng.Hi, hour(p.High))
			median.At, median.Y = append(median.At, s.At), append(median.Y, hour(p.Median))
			vwap.At, vwap.Y = append(vwap.At, s.At), append(vwap.Y, hour(p.VWAP))
		}
	}
	name := model + " in " + cur
	return marketChart{Model: model, Depth: depthChart("depth of "+name, hourBook(book), scale, 480, 200),
		Prices: bandChart("prices per GPU-hour of "+name, "no contract settled in the window has paid for use yet", []band{rng}, []series{median, vwap}, 480, 180),
		GPUs:   lineChart("GPUs of "+name, []series{gpus, free}, 480, 180)}
}

// hourBook is book with its prices per GPU-hour, as the Market page
// shows every price: 3600 times each, exactly.
func hourBook(b *protocol.Book) *protocol.Book {
	if b == nil {
		return nil
	}
	h := *b
	levels := func(ls []protocol.Level) []protocol.Level {
		out := make([]protocol.Level, len(ls))
		for i, l := range ls {
			l.Price = contract.PerHour(l.Price)
			out[i] = l
		}
		return out
	}
	h.Asks, h.Bids = levels(b.Asks), levels(b.Bids)
	for _, p := range []**decimal.Decimal{&h.BestAsk, &h.BestBid, &h.Spread, &h.Mid} {
		if *p != nil {
			v := contract.PerHour(**p)
			*p = &v
		}
	}
	return &h
}

// since writes how long ago, to the second.
func since(d time.Duration) string {
	if d < time.Minute {
		return strconv.Itoa(int(d/time.Second)) + " s ago"
	}
	return d.String() + " ago"
}

// marketCSV is the table of each currency's latest publication.
func (c *Console) marketCSV(r *http.Request, emit func(...string) error) error {
	mv, err := page[marketView](r, c.market)
	if err != nil {
		return err
	}
	if mv.NoSource {
		return &bourse.Error{Code: bourse.ENotFound, Message: "this console follows no market data (run it with --nats)"}
	}
	// A price not known is an empty cell, not the page's dash.
	blank := func(s string) string {
		if s == "-" {
			return ""
		}
		return s
	}
	for _, mc := range mv.Currencies {
		for _, row := range mc.Rows {
			if err := emit(mc.Currency, csvTime(mc.At), row.Model, strconv.Itoa(row.Settled), row.Used, row.Charged, blank(row.Low), blank(row.Median), blank(row.High), blank(row.VWAP),
				strconv.Itoa(row.GPUs), strconv.Itoa(row.Free), strconv.Itoa(row.Waiting), strconv.Itoa(row.WaitingGPUs), blank(row.Best)); err != nil {
				return err
			}
		}
	}
	return nil
}
