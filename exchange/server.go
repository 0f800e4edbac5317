package exchange

import (
	"context"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/protocol/natswire"
	"github.com/bourse/bourse/trade"
)

// handleHello registers a server: its revenue account is opened (once) and
// it learns how often to speak.
func (s *Service) handleHello(r micro.Request) {
	id, err := sender(r, protocol.RoleServer)
	var h protocol.Hello
	if err == nil {
		err = decode(r, &h)
	}
	if err == nil {
		err = s.checkHello(context.Background(), h)
	}
	if err == nil {
		cur := currency.Code(h.Currency)
		_, err = s.store.Ledger().OpenAccount(context.Background(), currency.Account{ID: currency.RevenueID(cur, id), Currency: cur, Kind: currency.Revenue})
	}
	if err != nil {
		_ = natswire.RespondError(r, err)
		return
	}
	s.servers.remember(id, h.Currency, true)
	s.servers.update(id, h)
	s.log.Info("server registered", "server", id, "gpus", len(h.GPUs), "currency", h.Currency, "policy", h.Policy)
	respond(r, protocol.HelloReply{
		Heartbeat:       trade.Duration(s.cfg.Heartbeat),
		ReadingEvery:    trade.Duration(s.cfg.ReadingEvery),
		ServerLostAfter: trade.Duration(s.cfg.ServerLostAfter),
	})
}

// checkHello checks a hello or heartbeat and that its currency exists.
func (s *Service) checkHello(ctx context.Context, h protocol.Hello) error {
	if err := h.Check(); err != nil {
		return err
	}
	if _, ok := s.scaleOf(ctx)(h.Currency); !ok {
		return &bourse.Error{Code: bourse.EUnknownCurrency, Field: "currency", Message: "no currency " + h.Currency}
	}
	return nil
}

// handleHeartbeat refreshes the registry. Every instance hears every
// heartbeat; a malformed one is ignored, and so is one in a currency the
// server has not registered in with a hello: the server has no revenue
// account there, and a contract it won would have nowhere to pay.
func (s *Service) handleHeartbeat(m *nats.Msg) {
	role, id, _, ok := protocol.Sender(m.Subject)
	if !ok || role != protocol.RoleServer {
		return
	}
	h, err := protocol.DecodeHello(m.Data)
	if err == nil {
		err = s.checkHello(context.Background(), h)
	}
	if err != nil {
		s.metrics.heartbeats.WithLabelValues("malformed").Inc()
		return
	}
	if !s.registered(context.Background(), id, h.Currency) {
		s.metrics.heartbeats.WithLabelValues("unregistered").Inc()
		s.log.Debug("heartbeat in a currency the server has not registered in", "server", id, "currency", h.Currency)
		return
	}
	s.servers.update(id, h)
}

// registered reports whether server has said hello in currency cur. One
// instance answers each hello but every instance hears every heartbeat,
// so the ledger (the server's revenue account) is the record, which the
// registry caches.
func (s *Service) registered(ctx context.Context, server, cur string) bool {
	if yes, known := s.servers.registered(server, cur); known {
		return yes
	}
	_, err := s.store.Ledger().Account(ctx, currency.RevenueID(currency.Code(cur), server))
	s.servers.remember(server, cur, err == nil)
	return err == nil
}

// handleStarted is a server's report that a job started, for a start that
// was not confirmed in the reply to Start.
func (s *Service) handleStarted(r micro.Request) {
	id, err := sender(r, protocol.RoleServer)
	var st protocol.Started
	if err == nil {
		err = decode(r, &st)
	}
	var c trade.Contract
	if err == nil {
		c, err = s.markStarted(context.Background(), id, st)
	}
	if err != nil {
		_ = natswire.RespondError(r, err)
		return
	}
	respond(r, c)
}
