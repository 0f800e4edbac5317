package exchange

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/protocol"
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
		_ = protocol.RespondError(r, err)
		return
	}
	s.servers.update(id, h)
	s.log.Info("server registered", "server", id, "gpus", len(h.GPUs), "currency", h.Currency, "policy", h.Policy)
	respond(r, protocol.HelloReply{
		Heartbeat:       protocol.Duration(s.cfg.Heartbeat),
		ReadingEvery:    protocol.Duration(s.cfg.ReadingEvery),
		ServerLostAfter: protocol.Duration(s.cfg.ServerLostAfter),
	})
}

func (s *Service) checkHello(ctx context.Context, h protocol.Hello) error {
	if _, ok := s.scaleOf(ctx)(h.Currency); !ok {
		return &bourse.Error{Code: bourse.EUnknownCurrency, Field: "currency", Message: "no currency " + h.Currency}
	}
	if len(h.GPUs) == 0 || len(h.GPUs) > 4096 || h.Free < 0 || h.Free > len(h.GPUs) {
		return &bourse.Error{Code: bourse.EInvalid, Field: "gpus", Message: fmt.Sprintf("%d GPUs with %d free is not a server", len(h.GPUs), h.Free)}
	}
	return nil
}

// handleHeartbeat refreshes the registry. Every instance hears every
// heartbeat; a malformed one is ignored.
func (s *Service) handleHeartbeat(m *nats.Msg) {
	role, id, _, ok := protocol.Sender(m.Subject)
	var h protocol.Hello
	if !ok || role != protocol.RoleServer || json.Unmarshal(m.Data, &h) != nil || s.checkHello(context.Background(), h) != nil {
		return
	}
	s.servers.update(id, h)
}

// handleStarted is a server's report that a job started, for a start that
// was not confirmed in the reply to Start.
func (s *Service) handleStarted(r micro.Request) {
	id, err := sender(r, protocol.RoleServer)
	var st protocol.Started
	if err == nil {
		err = decode(r, &st)
	}
	var c protocol.Contract
	if err == nil {
		c, err = s.markStarted(context.Background(), id, st)
	}
	if err != nil {
		_ = protocol.RespondError(r, err)
		return
	}
	respond(r, c)
}
