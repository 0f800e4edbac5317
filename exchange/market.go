package exchange

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/caps"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// Market is the market data of every currency traded or offered lately,
// by currency code: what the contracts settled in the last MarketWindow
// paid for what they used (from the store, so that each counts once
// whichever instance settled it), the GPUs of the servers heard from
// (every instance hears every heartbeat), and the waiting offers of the
// book. It names no client. Its driver publishes it every MarketEvery,
// from one instance at a time.
func (h *House) Market(ctx context.Context) ([]protocol.Market, error) {
	now := h.cfg.Now().UTC()
	covers, err := h.refresh(ctx, now.Add(-h.cfg.MarketWindow), now, h.cfg.MarketTape)
	if err != nil {
		return nil, fmt.Errorf("market data: read contracts settled: %w", err)
	}
	// Lines are keyed by the model folded, as routing matches models: a
	// client's "h100" waits for the servers' "H100", and is shown under
	// their spelling (the least of them, where servers differ).
	type key = lineKey
	lines := map[key]*protocol.MarketModel{}
	sells := map[key]bool{} // lines of a model some server has, or sold in the window
	line := func(cur, model string) *protocol.MarketModel {
		k := key{cur, contract.FoldModel(model)}
		if lines[k] == nil {
			lines[k] = &protocol.MarketModel{Model: model, Used: decimal.Zero, Charged: decimal.Zero}
		}
		return lines[k]
	}
	sold := map[key][]sale{}
	for _, s := range h.tape.copy() {
		k := key{s.currency, contract.FoldModel(s.model)}
		sold[k] = append(sold[k], s)
	}
	book, err := h.store.Book(ctx, BookQuery{Limit: h.cfg.BookTotal})
	if err != nil {
		return nil, fmt.Errorf("market data: read the book: %w", err)
	}
	bids := map[key][]contract.Terms{}
	for _, w := range book {
		model := w.Terms.Class.Model
		if model == "" {
			model = anyModel
		}
		d := &line(w.Terms.Currency, model).Waiting
		k := key{w.Terms.Currency, contract.FoldModel(model)}
		bids[k] = append(bids[k], w.Terms)
		d.Offers++
		d.GPUs += w.Terms.GPUs
		if w.Price.GreaterThan(d.Best) {
			d.Best = w.Price
		}
	}
	serverName := func(l *protocol.MarketModel, model string, k key) {
		if !sells[k] || model < l.Model {
			l.Model = model
		}
		sells[k] = true
	}
	for cur, byModel := range h.servers.capacity() {
		for model, c := range byModel {
			l := line(cur, model)
			serverName(l, model, key{cur, contract.FoldModel(model)})
			l.GPUs, l.Free = l.GPUs+c.gpus, l.Free+c.free
		}
	}
	// Every currency has its market data, traded in or not, so that a
	// reader learns at once that nothing trades.
	all, err := h.store.Ledger().Currencies(ctx)
	if err != nil {
		return nil, fmt.Errorf("market data: list currencies: %w", err)
	}
	curs := make(map[string]int32, len(all))
	for _, c := range all {
		// The caps' units are ledger currencies nothing is traded in.
		if caps.Unit(c.Code) {
			continue
		}
		curs[string(c.Code)] = c.Scale
	}
	for k, ss := range sold {
		sc, ok := curs[k.cur]
		if !ok {
			continue
		}
		l := line(k.cur, ss[0].model)
		serverName(l, ss[0].model, k)
		l.Settled, l.Used, l.Charged, l.Prices = len(ss), total(ss, sale.usedOf), total(ss, sale.chargedOf), prices(ss, sc+protocol.PricePlaces)
		last := ss[len(ss)-1] // the tape is in the order sales settled
		l.Last = &protocol.Trade{Price: last.charged.DivRound(last.used, sc+protocol.PricePlaces), At: last.at.UTC()}
	}
	asks := map[key][]askOrder{}
	for cur, byModel := range h.servers.askSide() {
		for model, os := range byModel {
			k := key{cur, contract.FoldModel(model)}
			serverName(line(cur, model), model, k)
			asks[k] = append(asks[k], os...)
		}
	}
	dropUnsold(lines, sells)
	for k, l := range lines {
		sc, ok := curs[k.cur]
		if !ok {
			continue
		}
		places := sc + protocol.PricePlaces
		var as, bs []order
		for _, a := range asks[k] {
			as = append(as, order{price: askPrice(a.price, places), gpus: a.gpus})
		}
		for _, t := range bids[k] {
			bs = append(bs, order{price: bidPrice(t, places), gpus: t.GPUs})
		}
		l.Book = bookOf(as, bs, places)
	}
	sellers := h.servers.sellers()
	var out []protocol.Market
	for cur, sc := range curs {
		m := protocol.Market{Currency: cur, Scale: sc, At: now, Window: contract.Duration(now.Sub(covers)),
			Every: contract.Duration(h.cfg.MarketEvery), Models: []protocol.MarketModel{}, Servers: sellers[cur]}
		for k, l := range lines {
			if k.cur == cur {
				m.Models = append(m.Models, *l)
			}
		}
		slices.SortFunc(m.Models, func(a, b protocol.MarketModel) int { return strings.Compare(a.Model, b.Model) })
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b protocol.Market) int { return strings.Compare(a.Currency, b.Currency) })
	return out, nil
}

// maxUnsoldLines is how many models of a currency no live server has and
// none sold in the window market data shows at most: clients name the
// models of waiting offers, and one client's sixteen offers could
// otherwise add sixteen lines each.
const maxUnsoldLines = 16

// lineKey is a line of market data: a currency and a model, folded.
type lineKey struct{ cur, model string }

// dropUnsold keeps, per currency, the maxUnsoldLines lines that only
// waiting offers make (sells says which others do) with the most GPUs
// waiting, and drops the rest.
func dropUnsold(lines map[lineKey]*protocol.MarketModel, sells map[lineKey]bool) {
	type unsold struct {
		k lineKey
		l *protocol.MarketModel
	}
	byCur := map[string][]unsold{}
	for k, l := range lines {
		if !sells[k] {
			byCur[k.cur] = append(byCur[k.cur], unsold{k, l})
		}
	}
	for _, us := range byCur {
		if len(us) <= maxUnsoldLines {
			continue
		}
		slices.SortFunc(us, func(a, b unsold) int {
			if c := b.l.Waiting.GPUs - a.l.Waiting.GPUs; c != 0 {
				return c
			}
			return strings.Compare(a.l.Model, b.l.Model)
		})
		for _, u := range us[maxUnsoldLines:] {
			delete(lines, u.k)
		}
	}
}

// total sums one figure of sales.
func total(ss []sale, of func(sale) decimal.Decimal) decimal.Decimal {
	sum := decimal.Zero
	for _, s := range ss {
		sum = sum.Add(of(s))
	}
	return sum
}

func (s sale) usedOf() decimal.Decimal    { return s.used }
func (s sale) chargedOf() decimal.Decimal { return s.charged }

// prices sums up what sales paid per GPU-second used, at places decimal
// places: the lowest and highest sale's charge over its use; the median
// weighted by use, the price of the sale at which the GPU-seconds used at
// or below its price first reach half of all (so that it is a price some
// contract paid, and sales that used little cannot move it); and VWAP,
// all charged over all used. Each sale's price is exact until rounded.
func prices(ss []sale, places int32) *protocol.Prices {
	if len(ss) == 0 {
		return nil
	}
	sorted := slices.Clone(ss)
	// a.charged/a.used against b.charged/b.used, cross-multiplied: exact.
	slices.SortFunc(sorted, func(a, b sale) int {
		return cmp.Or(a.charged.Mul(b.used).Cmp(b.charged.Mul(a.used)), strings.Compare(a.id, b.id))
	})
	price := func(s sale) decimal.Decimal { return s.charged.DivRound(s.used, places) }
	used, charged := total(ss, sale.usedOf), total(ss, sale.chargedOf)
	median, below := sorted[len(sorted)-1], decimal.Zero
	for _, s := range sorted {
		if below = below.Add(s.used); below.Add(below).GreaterThanOrEqual(used) {
			median = s
			break
		}
	}
	return &protocol.Prices{
		Low:    price(sorted[0]),
		Median: price(median),
		High:   price(sorted[len(sorted)-1]),
		VWAP:   charged.DivRound(used, places),
	}
}

// marketDefaults fills in the market data's settings of c.
func (c *Config) marketDefaults() {
	if c.MarketWindow <= 0 {
		c.MarketWindow = time.Hour
	}
	if c.MarketEvery <= 0 {
		c.MarketEvery = 5 * time.Second
	}
	if c.MarketTape <= 0 {
		c.MarketTape = 100_000
	}
}

// bookDefaults fills in the book's settings of c.
func (c *Config) bookDefaults() {
	if c.BookPerClient <= 0 {
		c.BookPerClient = 16
	}
	if c.BookTotal <= 0 {
		c.BookTotal = 10_000
	}
	if c.MatchBatch <= 0 {
		c.MatchBatch = 100
	}
	if c.MatchScan <= 0 {
		c.MatchScan = 1000
	}
	if c.RematchEvery <= 0 {
		c.RematchEvery = 30 * time.Second
	}
	if c.MatchGap <= 0 {
		c.MatchGap = time.Second
	}
}
