package natsvc

import (
	"context"

	"github.com/nats-io/nats.go/micro"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/protocol/natswire"
)

// handleHello registers a server (bourse.v1.server.<s>.hello).
func (s *Service) handleHello(r micro.Request) {
	id, err := sender(r, protocol.RoleServer)
	var h protocol.Hello
	if err == nil {
		err = decode(r, &h)
	}
	if err == nil {
		s.checkAsk(id, r.Data(), r.Headers().Get(protocol.SigHeader), &h)
	}
	var reply protocol.HelloReply
	if err == nil {
		reply, err = s.house.Hello(context.Background(), id, h)
	}
	if err == nil && h.Runs != nil && (h.Runs.Runner == protocol.RunnerProcess || h.Runs.Runner == protocol.RunnerContainer) {
		// Only a server that runs programs or images has output to
		// send: a stream for each of a thousand synthetic servers would
		// take its quota of JetStream's storage for nothing.
		s.ensureOutput(context.Background(), id)
	}
	if err != nil {
		_ = natswire.RespondError(r, err)
		return
	}
	reply.Readings = true // the usage stream takes them (usage.go)
	reply.Receipts = true // receipts.go
	respond(r, reply)
}

// checkAsk holds the ask a hello or heartbeat carries to its server's
// signature of the message, where the exchange requires signatures (as
// of readings): an ask without one is dropped, and the server is routed
// to as one that says no ask, never on a word it did not sign.
func (s *Service) checkAsk(id string, data []byte, sig string, h *protocol.Hello) {
	v := s.cfg.Verifier
	if v == nil || h.Ask == nil {
		return
	}
	if err := v.Verify(id, data, sig); err != nil {
		h.Ask = nil
		s.refused.WithLabelValues("ask_unsigned").Inc()
		s.warn("server."+id, "an ask without its server's signature ignored", "server", id, "err", err)
	}
}

// handleStarted is a server's report that a job started, for a start that
// was not confirmed in the reply to Start (bourse.v1.server.<s>.started).
func (s *Service) handleStarted(r micro.Request) {
	id, err := sender(r, protocol.RoleServer)
	var st protocol.Started
	if err == nil {
		err = decode(r, &st)
	}
	var c contract.Contract
	if err == nil {
		c, err = s.house.Started(context.Background(), id, st)
	}
	if err != nil {
		_ = natswire.RespondError(r, err)
		return
	}
	respond(r, protocol.View(c)) // the server's view: none of the client's holds
}
