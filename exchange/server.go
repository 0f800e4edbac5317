package exchange

import (
	"context"
	"fmt"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/protocol"
)

// Hello registers server: its revenue account in the hello's currency is
// opened (once), it is offered work while it keeps speaking, and it learns
// how often to speak.
func (h *House) Hello(ctx context.Context, server string, hello protocol.Hello) (protocol.HelloReply, error) {
	if err := h.checkHello(ctx, hello); err != nil {
		return protocol.HelloReply{}, err
	}
	if err := h.servers.timely(server, hello.At, h.cfg.ClockSkew, false); err != nil {
		return protocol.HelloReply{}, err
	}
	cur := currency.Code(hello.Currency)
	if _, err := h.store.Ledger().OpenAccount(ctx, currency.Account{ID: currency.RevenueID(cur, server), Currency: cur, Kind: currency.Revenue}); err != nil {
		return protocol.HelloReply{}, err
	}
	h.servers.remember(server, hello.Currency, true)
	h.servers.update(server, hello)
	h.room.grow(server) // a new server: the book's offers may fit it
	h.log.Info("server registered", "server", server, "gpus", len(hello.GPUs), "currency", hello.Currency, "policy", hello.Policy)
	return protocol.HelloReply{
		Heartbeat:       contract.Duration(h.servers.helloEvery(server)),
		ChangeGap:       contract.Duration(h.cfg.Heartbeat / changeGap),
		ReadingEvery:    contract.Duration(h.cfg.ReadingEvery),
		ServerLostAfter: contract.Duration(h.cfg.ServerLostAfter),
	}, nil
}

// Heartbeat keeps server offered work. A malformed heartbeat is refused,
// and so is one in a currency the server has not registered in with a
// hello: it has no revenue account there, and a contract it won would
// have nowhere to pay. So is a stale one (registry.timely): a signed
// heartbeat captured and sent again later would otherwise say, in its
// server's name, that it is alive, has room, and runs what it ran.
func (h *House) Heartbeat(ctx context.Context, server string, hello protocol.Hello) error {
	if err := h.checkHello(ctx, hello); err != nil {
		h.metrics.heartbeats.WithLabelValues("malformed").Inc()
		return err
	}
	if !h.registered(ctx, server, hello.Currency) {
		h.metrics.heartbeats.WithLabelValues("unregistered").Inc()
		h.log.Debug("heartbeat in a currency the server has not registered in", "server", server, "currency", hello.Currency)
		return &bourse.Error{Code: bourse.EPermission, Field: "currency", Message: "server " + server + " has not said hello in " + hello.Currency}
	}
	if err := h.servers.timely(server, hello.At, h.cfg.ClockSkew, true); err != nil {
		h.metrics.heartbeats.WithLabelValues("stale").Inc()
		h.log.Debug("stale heartbeat ignored", "server", server, "err", err)
		return err
	}
	if h.servers.update(server, hello) {
		h.room.grow(server) // GPUs freed up, or it is back: offer it the book
	}
	return nil
}

// HeartbeatAgain hears server's last heartbeat said again at at: a
// driver that finds a heartbeat's bytes the same as the last it passed to
// Heartbeat but for its time says so (natsvc), and the House checks its
// time alone, the rest having been checked then. It reports false, doing
// nothing, where the House has not heard the server: the driver then
// passes the heartbeat to Heartbeat.
func (h *House) HeartbeatAgain(server string, at time.Time) (heard bool, err error) {
	if err := h.servers.timely(server, at, h.cfg.ClockSkew, true); err != nil {
		h.metrics.heartbeats.WithLabelValues("stale").Inc()
		h.log.Debug("stale heartbeat ignored", "server", server, "err", err)
		return true, err
	}
	heard, grew := h.servers.again(server, at)
	if grew {
		h.room.grow(server) // more GPUs free, or back after silence: offer it the book
	}
	return heard, nil
}

// checkHello checks a hello or heartbeat and that its currency exists.
func (h *House) checkHello(ctx context.Context, hello protocol.Hello) error {
	if err := hello.Check(); err != nil {
		return err
	}
	scale, ok := h.scaleOf(ctx)(hello.Currency)
	if !ok {
		return &bourse.Error{Code: bourse.EUnknownCurrency, Field: "currency", Message: "no currency " + hello.Currency}
	}
	if hello.Scale != nil && *hello.Scale != scale {
		// Its prepayments and charges would have the wrong number of
		// decimal places: every counter-offer refused, or offers
		// refused that the ledger takes.
		return &bourse.Error{Code: bourse.EInvalid, Field: "scale", Message: fmt.Sprintf(
			"currency %s has %d decimal places on this exchange, and this server prices it at %d: set the server's currency.scale to %d (or --scale %d)",
			hello.Currency, scale, *hello.Scale, scale, scale)}
	}
	return nil
}

// registered reports whether server has said hello in currency cur. One
// instance answers each hello but every instance hears every heartbeat,
// so the ledger (the server's revenue account) is the record, which the
// registry caches.
func (h *House) registered(ctx context.Context, server, cur string) bool {
	if yes, known := h.servers.registered(server, cur); known {
		return yes
	}
	_, err := h.store.Ledger().Account(ctx, currency.RevenueID(currency.Code(cur), server))
	h.servers.remember(server, cur, err == nil)
	return err == nil
}
