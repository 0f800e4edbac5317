package protocol

import (
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/contract"
)

// MarketPrefix is where the exchange publishes market data:
// bourse.v1.market.<currency>, a Market every few seconds. Any party may
// subscribe; nobody but the exchange may publish there.
const MarketPrefix = Prefix + ".market"

// MarketSubject is where the market data of currency cur is published.
func MarketSubject(cur string) string { return MarketPrefix + "." + cur }

// MarketSubjects is every currency's market data, for a subscription.
const MarketSubjects = MarketPrefix + ".>"

// Market is one currency's market data, as the exchange publishes it every
// Every on MarketSubject(Currency). It names no client: every figure is a
// count or a price. The contracts figures cover those settled in the
// Window before At; the GPUs are those of the servers heard from lately.
// Prices are what was paid for what was used: per GPU-second used, at the
// currency's Scale plus PricePlaces decimal places.
type Market struct {
	Currency string            `json:"currency"`
	Scale    int32             `json:"scale"`
	At       time.Time         `json:"at"`
	Window   contract.Duration `json:"window"`
	Every    contract.Duration `json:"every"`
	// Models has a line per GPU model: a contract counts under the model
	// its terms ask for, or else the one model of its server's GPUs that
	// fit it ("any" where neither says); a waiting offer under the model
	// it asks for, "any" if none.
	Models []MarketModel `json:"models"`
	// Servers are the servers heard from lately in the currency, by id,
	// with their GPUs and how many are free: the sellers, whose capacity
	// reports of utilisation and idle time divide by.
	Servers []MarketServer `json:"servers,omitempty"`
}

// MarketServer is a server's GPUs in market data: how many, and how many
// are free.
type MarketServer struct {
	ID   string `json:"id"`
	GPUs int    `json:"gpus"`
	Free int    `json:"free"`
	// Record is how it kept its word lately (Record); nil where the
	// exchange keeps none.
	Record *Record `json:"record,omitempty"`
}

// PricePlaces is how many decimal places beyond its currency's scale a
// price per GPU-second carries in market data and in the book: a price
// per GPU-second is small beside the amounts it adds up to.
const PricePlaces = 6

// MarketModel is one GPU model's market data in a currency.
type MarketModel struct {
	Model string `json:"model"`
	// Settled is how many contracts settled in the window paid for use:
	// charged more than nothing for more than no GPU-seconds used (U).
	// A contract that used nothing or paid nothing moved no money for
	// use, and counts nowhere here. Used is the GPU-seconds those
	// contracts used, Charged what they paid.
	Settled int             `json:"settled"`
	Used    decimal.Decimal `json:"gpu_seconds_used"`
	Charged decimal.Decimal `json:"charged"`
	// Prices of those contracts per GPU-second used (each one's charge
	// over its U), each weighted by its GPU-seconds used; absent with no
	// such contracts.
	Prices *Prices `json:"prices,omitempty"`
	// GPUs of the model on the servers heard from lately, and how many
	// of them are free.
	GPUs int `json:"gpus"`
	Free int `json:"free"`
	// Waiting offers in the book that ask for the model.
	Waiting Depth `json:"waiting"`
	// Last is the last contract of the window's that paid for use: its
	// price per GPU-second used and when it settled; absent with none.
	// Settled, Used and Charged are the window's volume.
	Last *Trade `json:"last,omitempty"`
	// Book is both sides of the model's book: the servers' asks and the
	// waiting offers, by price level; absent where neither side has any.
	Book *Book `json:"book,omitempty"`
}

// Trade is a contract settled, as market data shows it: what it paid per
// GPU-second used (its charge over its U), and when it settled.
type Trade struct {
	Price decimal.Decimal `json:"price"`
	At    time.Time       `json:"at"`
}

// BookLevels is how many price levels market data shows of each side of
// a model's book: those nearest the other side. The totals count every
// level.
const BookLevels = 20

// Book is both sides of a GPU model's book in a currency, by price level,
// naming no party: the sell side from the servers' asks (each class of a
// live server's GPUs that names a price and has GPUs free, at the GPUs
// free), the buy side from the waiting offers that ask for the model (at
// the GPUs each wants).
//
// Both sides are placed by one measure, so that they can be set side by
// side: the price per GPU-second of one GPU used in full, P(1) + Q(1),
// of the ask's curves (the order in which the exchange considers asks,
// ClassAsk.Price) and of the offer's (no ask dearer than that is met by
// it). It is rounded to the currency's scale plus PricePlaces, an ask's
// up and an offer's down, so that a book shown crossed (BestBid at or
// above BestAsk) is crossed. Where an offer's curves rise with its rate
// of use, its level is below what it pays at full use of all its GPUs;
// the book itself orders waiting offers by their sure price
// (Depth.Best).
type Book struct {
	// Asks are the sell side's levels, cheapest first; Bids the buy
	// side's, dearest first; at most BookLevels each.
	Asks []Level `json:"asks"`
	Bids []Level `json:"bids"`
	// AskGPUs and BidGPUs are each side's GPUs at every level, shown or
	// not.
	AskGPUs int `json:"ask_gpus"`
	BidGPUs int `json:"bid_gpus"`
	// BestAsk and BestBid are the first level's price of each side; the
	// spread (BestAsk − BestBid, negative where the book is crossed) and
	// mid, halfway between them, where both sides have a level.
	BestAsk *decimal.Decimal `json:"best_ask,omitempty"`
	BestBid *decimal.Decimal `json:"best_bid,omitempty"`
	Spread  *decimal.Decimal `json:"spread,omitempty"`
	Mid     *decimal.Decimal `json:"mid,omitempty"`
}

// Level is one price level of a side of the book: the GPUs there and how
// many asks (servers' classes) or waiting offers make them up.
type Level struct {
	Price  decimal.Decimal `json:"price"`
	GPUs   int             `json:"gpus"`
	Orders int             `json:"orders"`
}

// Prices sums up what settled contracts paid per GPU-second used: the
// lowest and highest contract's, the median weighted by GPU-seconds used
// (the price of the contract at which half the GPU-seconds used had been
// bought at or below it: a price some contract paid, which contracts that
// used little cannot move), and VWAP, all that was charged over all the
// GPU-seconds used.
type Prices struct {
	Low    decimal.Decimal `json:"low"`
	Median decimal.Decimal `json:"median"`
	High   decimal.Decimal `json:"high"`
	VWAP   decimal.Decimal `json:"vwap"`
}

// Depth sums up the book's waiting offers of a model: how many, the GPUs
// they ask for, and the best (highest) sure price among them, by which
// the book is ordered (contract.Waiting.Price).
type Depth struct {
	Offers int             `json:"offers"`
	GPUs   int             `json:"gpus"`
	Best   decimal.Decimal `json:"best,omitzero"`
}

// QuoteRequest asks what the servers would say to an offer of Terms
// (bourse.v1.client.<c>.quote), without making one: nothing is escrowed,
// no GPU is claimed, and no contract or waiting offer comes of it.
type QuoteRequest struct {
	Terms contract.Terms `json:"terms"`
}

// QuoteReply is what the servers' asks say of a quote's terms, no server
// asked: the servers whose asks the terms meet, with room (an offer would
// go to them), counter-offers built from the asks of those with room
// that the terms do not meet (each may be taken as from an offer's reply,
// while valid), and the rejections without a counter (no room: when GPUs
// free up). Unpriced are servers an offer would go to whose asks name no
// price: only an offer learns what they would say.
type QuoteReply struct {
	Accepts    []string           `json:"accepts,omitempty"`
	Counters   []contract.Counter `json:"counters,omitempty"`
	Rejections []Rejection        `json:"rejections,omitempty"`
	Unpriced   []string           `json:"unpriced,omitempty"`
}

// HourPrices are the prices per GPU-hour a reader is shown of market
// lines ls, in order: each line's low, median, high and VWAP where it
// has contracts' prices, then its best waiting offer where one waits.
// Every screen of market data (bourse market, the console's Market page)
// prints these and sets their decimal places from all of them
// (currency.PricePlaces), so that a column lines up.
func HourPrices(ls []MarketModel) []decimal.Decimal {
	var ds []decimal.Decimal
	for _, l := range ls {
		if p := l.Prices; p != nil {
			ds = append(ds, contract.PerHour(p.Low), contract.PerHour(p.Median), contract.PerHour(p.High), contract.PerHour(p.VWAP))
		}
		if l.Waiting.Offers > 0 {
			ds = append(ds, contract.PerHour(l.Waiting.Best))
		}
	}
	return ds
}
