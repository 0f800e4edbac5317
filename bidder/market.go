package bidder

import (
	"context"
	"fmt"
	"sync"

	json "github.com/go-json-experiment/json/v1"
	"github.com/nats-io/nats.go"
	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/bidder/strategy"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// Quote asks what the servers would answer an offer of t now, binding no
// one: the servers that would accept, and the others' counter-offers,
// which Take takes while they are valid. Nothing is escrowed or claimed.
func (c *Client) Quote(ctx context.Context, t contract.Terms) (protocol.QuoteReply, error) {
	var r protocol.QuoteReply
	err := c.request(ctx, protocol.VerbQuote, protocol.QuoteRequest{Terms: t}, &r)
	return r, err
}

// Market delivers the market data of currency cur (every currency if
// cur is empty) as the exchange publishes it, every few seconds, until
// ctx ends. The channel is buffered; a message that finds it full is
// dropped (the next one is whole).
func (c *Client) Market(ctx context.Context, cur string) (<-chan protocol.Market, error) {
	return SubscribeMarket(ctx, c.nc, cur)
}

// SubscribeMarket delivers the market data of currency cur (every
// currency if cur is empty) published on nc, until ctx ends. Any NATS user
// of a market may read it.
func SubscribeMarket(ctx context.Context, nc *nats.Conn, cur string) (<-chan protocol.Market, error) {
	subject := protocol.MarketSubjects
	if cur != "" {
		if err := protocol.CheckID(cur); err != nil {
			return nil, fmt.Errorf("bidder: market data of %q: %w", cur, err)
		}
		subject = protocol.MarketSubject(cur)
	}
	return subscribe[protocol.Market](ctx, nc, subject, 16)
}

// subscribe delivers the messages on subject, decoded as T, until ctx
// ends. The channel has room for buffer; a message that finds it full is
// dropped, and one that does not decode is skipped.
func subscribe[T any](ctx context.Context, nc *nats.Conn, subject string, buffer int) (<-chan T, error) {
	ch := make(chan T, buffer)
	var mu sync.Mutex // guards closed: a callback may run while ctx ends
	closed := false
	sub, err := nc.Subscribe(subject, func(m *nats.Msg) {
		var v T
		if json.Unmarshal(m.Data, &v) != nil {
			return
		}
		ordered(&v)
		mu.Lock()
		defer mu.Unlock()
		if closed {
			return
		}
		select {
		case ch <- v:
		default:
		}
	})
	if err != nil {
		return nil, fmt.Errorf("bidder: subscribe to %s: %w", subject, err)
	}
	if err := nc.Flush(); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("bidder: subscribe to %s: %w", subject, err)
	}
	go func() {
		<-ctx.Done()
		_ = sub.Unsubscribe()
		mu.Lock()
		closed = true
		close(ch)
		mu.Unlock()
	}()
	return ch, nil
}

// MarketPrices keeps the latest market data of every currency, as the
// exchange publishes it, for strategies that bid the going rate
// (strategy.Going). It is safe for concurrent use.
type MarketPrices struct {
	mu     sync.Mutex
	latest map[string]protocol.Market
}

var _ strategy.Prices = (*MarketPrices)(nil)

// WatchPrices follows the market data published on nc until ctx ends.
// Until the first publication comes (within a few seconds) it knows no
// price, and a strategy bids as it would without market data.
func WatchPrices(ctx context.Context, nc *nats.Conn) (*MarketPrices, error) {
	ch, err := SubscribeMarket(ctx, nc, "")
	if err != nil {
		return nil, err
	}
	p := &MarketPrices{latest: map[string]protocol.Market{}}
	go func() {
		for m := range ch {
			p.mu.Lock()
			p.latest[m.Currency] = m
			p.mu.Unlock()
		}
	}()
	return p, nil
}

// Median is the median price per GPU-second used that the contracts
// settled lately in cur for model paid, weighted by the GPU-seconds they
// used: contracts that used nothing or paid nothing do not move it.
func (p *MarketPrices) Median(cur, model string) (decimal.Decimal, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.latest[cur].Models {
		if l.Model == model && l.Prices != nil {
			return l.Prices.Median, true
		}
	}
	return decimal.Decimal{}, false
}

// Prices follows the market data on the client's connection (WatchPrices).
func (c *Client) Prices(ctx context.Context) (*MarketPrices, error) { return WatchPrices(ctx, c.nc) }

// Known says whether any market data has come.
func (p *MarketPrices) Known() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.latest) > 0
}
