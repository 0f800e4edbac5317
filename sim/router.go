package sim

import (
	"context"
	"iter"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/server"
)

// router is the House's Router inside a simulation: it calls the server
// nodes directly, at the engine's time, one at a time in the House's
// order (cheapest ask first, ties spread by the offer's id), as the
// exchange's router asks over NATS with its fan-out of one: those after
// the first accept are not asked at all. The hedge beside a slow server
// has no part here, where every node answers at once.
type router struct {
	m *Simulation
}

var _ exchange.Router = (*router)(nil)

func (r *router) Ask(_ context.Context, offer protocol.ServerOffer, servers []string) iter.Seq[exchange.Answer] {
	return func(yield func(exchange.Answer) bool) {
		now := r.m.e.Now()
		for _, s := range servers {
			if !yield(exchange.Answer{Server: s, Decision: r.m.nodes[s].Decide(now, offer)}) {
				return
			}
		}
	}
}

func (r *router) Quote(_ context.Context, offer protocol.ServerOffer, servers []string) iter.Seq[exchange.Answer] {
	return func(yield func(exchange.Answer) bool) {
		now := r.m.e.Now()
		for _, s := range servers {
			if !yield(exchange.Answer{Server: s, Decision: r.m.nodes[s].Quote(now, offer)}) {
				return
			}
		}
	}
}

// Start starts the job as the agent would: the jobs it preempts stop (their
// final readings go to the House), then it launches.
func (r *router) Start(ctx context.Context, s protocol.Start, done func(protocol.Started, error)) {
	id := s.Contract.Server
	started, launching, err := r.m.nodes[id].Begin(ctx, r.m.e.Now, s, func(stops []server.Stop) { r.m.stop(id, stops) })
	done(started, err)
	if err != nil && !launching {
		return
	}
	if launching {
		r.m.heartbeat(id) // the agent says its changed ask soon, polling or not
	}
	r.m.rewake(id) // a booking confirmed: its slot is a wake
}

func (r *router) Cancel(server, offer string) { r.m.nodes[server].Cancel(r.m.e.Now(), offer) }

func (r *router) Control(_ context.Context, c contract.Contract, action contract.Reason, done func(error)) {
	err := r.m.nodes[c.Server].Control(r.m.e.Now(), c.ID, action)
	if done != nil {
		done(err)
	}
	r.m.rewake(c.Server) // the job stops at the node's next tick: now
}
