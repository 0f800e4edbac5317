package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/nats-io/nats.go"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/bidder"
	"github.com/bourse/bourse/console"
	"github.com/bourse/bourse/protocol"
)

// followMarket connects to NATS at url and keeps every currency's market
// data, as the exchange publishes it, for the console's Market page until
// ctx ends; close closes the connection. The connection must be made at
// once (a wrong URL or password is said at start, as by bourse exchange),
// and is made again, for ever, whenever it drops: the page says meanwhile
// that its data is stale. A NATS user that may not read the market data
// is refused here too, rather than leaving the page waiting for ever.
func followMarket(ctx context.Context, url string, opts []nats.Option, log *slog.Logger) (*console.MarketHistory, func(), error) {
	opts = append([]nats.Option{nats.Name("bourse-console"), nats.MaxReconnects(-1),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) { log.Warn("console: NATS disconnected", "err", err) }),
		nats.ReconnectHandler(func(c *nats.Conn) { log.Info("console: NATS reconnected", "url", c.ConnectedUrl()) }),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { log.Warn("console: NATS", "err", err) })}, opts...)
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, nil, &bourse.Error{Code: bourse.EUnavailable, Op: "console", Message: "connect to NATS at " + url, Err: err}
	}
	ch, err := bidder.SubscribeMarket(ctx, nc, "")
	if err == nil {
		// The server's refusal comes before the answer to the flush
		// that SubscribeMarket waits for.
		if last := nc.LastError(); errors.Is(last, nats.ErrPermissionViolation) {
			err = fmt.Errorf("the console's NATS user may not read %s (docs/operations.md, \"The console's NATS user\"): %w", protocol.MarketSubjects, last)
		}
	}
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	h := console.NewMarketHistory(0, nil)
	go h.Follow(ctx, ch)
	return h, nc.Close, nil
}
