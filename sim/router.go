package sim

import (
	"context"
	"iter"
	"math/rand/v2"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/server"
)

// router is the House's Router inside a simulation: it calls the server
// nodes directly, at the engine's time. Over NATS every server is asked at
// once and the first accept to arrive wins, the later ones cancelled;
// here the servers are asked one at a time in an order drawn from the
// router's random stream, so that no server wins by its name, and those
// after the first accept are not asked at all: what they would have said
// is never heard, and asking sixteen servers to hear one is most of what
// an offer costs.
type router struct {
	m     *Simulation
	rng   *rand.Rand
	order []string
}

var _ exchange.Router = (*router)(nil)

func (r *router) Ask(_ context.Context, offer protocol.ServerOffer, servers []string) iter.Seq[exchange.Answer] {
	return func(yield func(exchange.Answer) bool) {
		now := r.m.e.Now()
		// The House's slice is its own; the order is the router's. Ask is
		// not called again before this one ends (one goroutine), so one
		// slice serves every offer.
		r.order = append(r.order[:0], servers...)
		r.rng.Shuffle(len(r.order), func(i, j int) { r.order[i], r.order[j] = r.order[j], r.order[i] })
		for _, s := range r.order {
			if !yield(exchange.Answer{Server: s, Decision: r.m.nodes[s].Decide(now, offer)}) {
				return
			}
		}
	}
}

// Quote asks each node what it would answer, claiming nothing.
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
