package natsvc

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/micro"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/protocol/natswire"
)

// matchEvery is how often the leading instance offers the book to the
// servers whose GPUs freed up: a heartbeat's news waits at most this.
const matchEvery = 100 * time.Millisecond

// match runs the House's matching until ctx ends, on the instance that
// leads alone: every instance hears the heartbeats that show GPUs freeing
// up, and one offering the book to them is enough (the claims of the
// waiting offers' request ids keep two from negotiating one offer, should
// two lead for a moment).
func (s *Service) match(ctx context.Context) {
	every(ctx, matchEvery, func() {
		if s.served() && s.peers.leads(s.cfg.Now()) {
			s.house.Match(ctx)
		}
	})
}

// every calls fn every d until ctx ends.
func every(ctx context.Context, d time.Duration, fn func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}

// handleCancel takes a waiting offer out of the book
// (bourse.v1.client.<c>.cancel).
func (s *Service) handleCancel(r micro.Request) {
	serveClient(r, func(ctx context.Context, client string, req protocol.CancelRequest) (contract.Waiting, error) {
		return s.house.Cancel(ctx, client, req.Offer)
	})
}

// handleWaiting lists the client's waiting offers
// (bourse.v1.client.<c>.waiting).
func (s *Service) handleWaiting(r micro.Request) {
	serveClient(r, func(ctx context.Context, client string, req protocol.WaitingRequest) (protocol.WaitingReply, error) {
		ws, err := s.house.WaitingOffers(ctx, client, req.Currency)
		return protocol.WaitingReply{Offers: ws}, err
	})
}

// serveClient answers a client's request: its body decoded strictly as
// Req, answered by do, or the error.
func serveClient[Req, Reply any](r micro.Request, do func(ctx context.Context, client string, req Req) (Reply, error)) {
	client, err := sender(r, protocol.RoleClient)
	var req Req
	if err == nil {
		err = decode(r, &req)
	}
	var reply Reply
	if err == nil {
		reply, err = do(context.Background(), client, req)
	}
	if err != nil {
		_ = natswire.RespondError(r, err)
		return
	}
	respond(r, reply)
}

// handleServers lists the live servers: what they say of themselves in
// their hellos and heartbeats, which every instance hears.
func (s *Service) handleServers(r micro.Request) {
	serveClient(r, func(_ context.Context, _ string, req protocol.ServersRequest) (protocol.ServersReply, error) {
		return protocol.ServersReply{Servers: s.house.Servers(req.Currency)}, nil
	})
}
