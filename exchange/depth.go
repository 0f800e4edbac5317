package exchange

import (
	"slices"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// The book's two sides in market data (protocol.Book): the servers' asks,
// each at the price per GPU-second of one GPU used in full, P(1) + Q(1),
// as the exchange orders asks (contract.ClassAsk.Price, askRank), and the waiting
// offers, each at what it is sure to pay per GPU-second (Terms.SurePrice),
// as the book orders them — rounded to the currency's scale plus
// protocol.PricePlaces, asks up and offers down, and summed by level. No
// level names a party. An offer is not placed at its curves' price at full
// use: one dear only at full use and backed by a tiny prepayment would
// show a bid it will never pay (the probe of 2026-12-01 made a best bid of
// 1000 for 32 GPUs out of 0.16 of prepayment).

// order is one ask or waiting offer on a side of the book: its level's
// price, rounded, and its GPUs.
type order struct {
	price decimal.Decimal
	gpus  int
}

// bidPrice is the level of a waiting offer of terms t, at places: what it
// is sure to pay per GPU-second.
func bidPrice(t contract.Terms, places int32) decimal.Decimal {
	return t.SurePrice().Floor(places)
}

// askPrice is the level of an ask, at places.
func askPrice(p contract.Price, places int32) decimal.Decimal { return p.Ceil(places) }

// bookOf is the book of asks and bids, nil where both are empty: each
// side summed by level, the BookLevels nearest the other side kept (the
// cheapest asks, the dearest bids), with the best of each, and the
// spread and mid where both have one. places are the prices' places.
func bookOf(asks, bids []order, places int32) *protocol.Book {
	if len(asks) == 0 && len(bids) == 0 {
		return nil
	}
	b := &protocol.Book{}
	b.Asks, b.AskGPUs = levels(asks, func(a, b decimal.Decimal) int { return a.Cmp(b) })
	b.Bids, b.BidGPUs = levels(bids, func(a, b decimal.Decimal) int { return b.Cmp(a) })
	if len(b.Asks) > 0 {
		p := b.Asks[0].Price
		b.BestAsk = &p
	}
	if len(b.Bids) > 0 {
		p := b.Bids[0].Price
		b.BestBid = &p
	}
	if b.BestAsk != nil && b.BestBid != nil {
		spread := b.BestAsk.Sub(*b.BestBid)
		mid := b.BestAsk.Add(*b.BestBid).DivRound(decimal.NewFromInt(2), places+1) // exact: half of places' figures
		b.Spread, b.Mid = &spread, &mid
	}
	return b
}

// levels sums orders by price, in the order by, keeping the first
// protocol.BookLevels, and counts the GPUs of them all.
func levels(os []order, by func(a, b decimal.Decimal) int) ([]protocol.Level, int) {
	out := []protocol.Level{}
	total := 0
	slices.SortFunc(os, func(a, b order) int { return by(a.price, b.price) })
	for _, o := range os {
		total += o.gpus
		if n := len(out); n > 0 && out[n-1].Price.Equal(o.price) {
			out[n-1].GPUs += o.gpus
			out[n-1].Orders++
			continue
		}
		if len(out) < protocol.BookLevels {
			out = append(out, protocol.Level{Price: o.price, GPUs: o.gpus, Orders: 1})
		}
	}
	return out, total
}
