package main

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/protocol"
)

// printDepth prints both sides of each model's book (protocol.Book), a
// currency at a time: a line of the best ask and bid, spread, mid, last
// trade and the window's volume, then the price levels of both sides,
// dearest at the top, asks above the bids unless the book is crossed.
func printDepth(out io.Writer, ms []protocol.Market) error {
	for i, m := range ms {
		if i > 0 {
			fmt.Fprintln(out)
		}
		cur := safe(m.Currency)
		fmt.Fprintf(out, "%s at %s: the book of each GPU model by price level, per GPU-hour of one GPU used in full (the wire's per GPU-second, times 3600); ASK GPUS are free on servers asking that price, BID GPUS wanted by offers waiting; at most %d levels a side\n",
			cur, when(m.At), protocol.BookLevels)
		if len(m.Models) == 0 {
			fmt.Fprintln(out, "no GPU model in this market yet")
		}
		for _, l := range m.Models {
			fmt.Fprintln(out)
			if err := printModelDepth(out, m, l); err != nil {
				return err
			}
		}
	}
	return nil
}

// printModelDepth prints one model's book.
func printModelDepth(out io.Writer, m protocol.Market, l protocol.MarketModel) error {
	b := l.Book
	if b == nil {
		b = &protocol.Book{}
	}
	var ds []decimal.Decimal
	for _, lv := range append(slices.Clone(b.Asks), b.Bids...) {
		ds = append(ds, contract.PerHour(lv.Price))
	}
	// Per GPU-hour, exactly (3600 times a price adds no places): levels
	// that differ print differently. The last trade is no level: what a
	// contract paid for use, at the currency's places (currency.FormatPrice),
	// so that a trade at 447.999984 a GPU-hour does not write every level
	// with six places.
	places := currency.ExactPlaces(m.Scale, ds...)
	price := func(d *decimal.Decimal) string {
		if d == nil {
			return "-"
		}
		return contract.PerHour(*d).StringFixed(places)
	}
	mid := "-"
	if b.Mid != nil {
		// Halfway between two levels may take a place more.
		h := contract.PerHour(*b.Mid)
		mid = h.StringFixed(places)
		if !h.Round(places).Equal(h) {
			mid = h.String()
		}
	}
	last := "-"
	if l.Last != nil {
		last = currency.FormatPrice(contract.PerHour(l.Last.Price), m.Scale) + " at " + when(l.Last.At)
	}
	fmt.Fprintf(out, "%s: best ask %s, best bid %s, spread %s, mid %s; asks %d GPUs, bids %d GPUs in all; last trade %s; %d contracts settled in the last %s, %s GPU-seconds used, %s %s charged\n",
		safe(l.Model), price(b.BestAsk), price(b.BestBid), price(b.Spread), mid, b.AskGPUs, b.BidGPUs, last,
		l.Settled, time.Duration(m.Window).Round(time.Second), gpuSeconds(l.Used), currency.Format(l.Charged, m.Scale), safe(m.Currency))
	if len(b.Asks) == 0 && len(b.Bids) == 0 {
		fmt.Fprintln(out, "no asks with GPUs free, no offers waiting")
		return nil
	}
	// Each price once, dearest first: a crossed book has both sides on
	// some lines.
	type side struct{ ask, bid *protocol.Level }
	at := map[string]*side{}
	var prices []decimal.Decimal
	put := func(lv protocol.Level, ask bool) {
		k := lv.Price.String()
		s := at[k]
		if s == nil {
			s = &side{}
			at[k] = s
			prices = append(prices, lv.Price)
		}
		if ask {
			s.ask = &lv
		} else {
			s.bid = &lv
		}
	}
	for _, lv := range b.Asks {
		put(lv, true)
	}
	for _, lv := range b.Bids {
		put(lv, false)
	}
	slices.SortFunc(prices, func(a, b decimal.Decimal) int { return b.Cmp(a) })
	tw := table(out)
	fmt.Fprintln(tw, "PRICE/GPU-H\tASK GPUS\tASKS\tBID GPUS\tOFFERS")
	cells := func(lv *protocol.Level) (string, string) {
		if lv == nil {
			return "", ""
		}
		return fmt.Sprint(lv.GPUs), fmt.Sprint(lv.Orders)
	}
	for _, p := range prices {
		s := at[p.String()]
		ag, an := cells(s.ask)
		bg, bn := cells(s.bid)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", price(&p), ag, an, bg, bn)
	}
	return tw.Flush()
}
