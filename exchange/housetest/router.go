package housetest

import (
	"context"
	"errors"
	"iter"
	"sync"
	"time"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/server"
)

// Router is the House's Router to the harness's nodes, called in the
// caller's goroutine at the clock's time, servers asked in the order
// given (by id), until one accepts. A server in Silent answers nothing,
// like one that hung.
type Router struct {
	h     *Harness
	Nodes map[string]*server.Node
	mu    sync.Mutex
	// Silent are the servers that answer nothing (set before the House
	// runs, or under Lock).
	Silent map[string]bool
	// Asked counts the offers each server was asked to decide (read it
	// with AskedOf).
	Asked map[string]int
	// late are the servers whose readings never reach the House while
	// they heartbeat (HoldReadings).
	late map[string]bool
	// mute are the servers that decide offers but never answer a start,
	// like one that hung after its accept (MuteStarts).
	mute map[string]bool
	// deaf are the servers that confirm a kill or suspend and carry on
	// regardless (IgnoreControls).
	deaf map[string]bool
	// hung are the servers that take offers and never answer them, each
	// costing the House its Negotiation on the clock (Hang).
	hung map[string]bool
}

// IgnoreControls has server confirm every kill and suspend and do
// nothing of it, as a server that lies would: the job runs on, its
// readings go on and its heartbeats list it.
func (r *Router) IgnoreControls(server string, ignore bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.deaf == nil {
		r.deaf = map[string]bool{}
	}
	r.deaf[server] = ignore
}

func (r *Router) ignores(server string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.deaf[server]
}

// Hang has server take every offer and answer none, while it goes on
// heartbeating: each offer asked of it moves the clock on by the House's
// Negotiation, as the wait for an answer that never comes does over
// NATS.
func (r *Router) Hang(server string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.hung == nil {
		r.hung = map[string]bool{}
	}
	r.hung[server] = true
}

func (r *Router) hangs(server string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hung[server]
}

// MuteStarts has server decide offers but never answer a start.
func (r *Router) MuteStarts(server string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mute == nil {
		r.mute = map[string]bool{}
	}
	r.mute[server] = true
}

// HoldReadings has server's readings held back (or delivered again):
// they never reach the House, as when the usage stream keeps them for an
// instance that paused, while the server goes on heartbeating.
func (r *Router) HoldReadings(server string, held bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.late == nil {
		r.late = map[string]bool{}
	}
	r.late[server] = held
}

func (r *Router) readingsHeld(server string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.late[server]
}

// Silence makes server silent (or speak again): it answers nothing and
// sends nothing.
func (r *Router) Silence(server string, silent bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Silent[server] = silent
}

// AskedOf is how many offers server was asked to decide.
func (r *Router) AskedOf(server string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.Asked[server]
}

func (r *Router) silent(server string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.Silent[server]
}

var _ exchange.Router = (*Router)(nil)

var errSilent = errors.New("the server is silent")

func (r *Router) Ask(_ context.Context, offer protocol.ServerOffer, servers []string) iter.Seq[exchange.Answer] {
	r.mu.Lock()
	hung := false
	for _, s := range servers {
		r.Asked[s]++
		hung = hung || r.hung[s]
	}
	r.mu.Unlock()
	if !hung {
		return r.ask(offer, servers, (*server.Node).Decide)
	}
	// The answers that come yield first; the hung servers' errors at the
	// negotiation's end, after its wait.
	return func(yield func(exchange.Answer) bool) {
		var answer, late []string
		for _, s := range servers {
			if r.hangs(s) {
				late = append(late, s)
			} else {
				answer = append(answer, s)
			}
		}
		for a := range r.ask(offer, answer, (*server.Node).Decide) {
			if !yield(a) {
				return
			}
		}
		r.h.Advance(r.h.House.Config().Negotiation)
		for _, s := range late {
			if !yield(exchange.Answer{Server: s, Err: errSilent}) {
				return
			}
		}
	}
}

func (r *Router) Quote(_ context.Context, offer protocol.ServerOffer, servers []string) iter.Seq[exchange.Answer] {
	return r.ask(offer, servers, (*server.Node).Quote)
}

func (r *Router) ask(offer protocol.ServerOffer, servers []string, decide func(*server.Node, time.Time, protocol.ServerOffer) protocol.Decision) iter.Seq[exchange.Answer] {
	return func(yield func(exchange.Answer) bool) {
		for _, s := range servers {
			a := exchange.Answer{Server: s}
			if r.silent(s) {
				a.Err = errSilent
			} else {
				a.Decision = decide(r.Nodes[s], r.h.Now(), offer)
			}
			if !yield(a) {
				return
			}
		}
	}
}

// Start starts the job as an agent would: the jobs it preempts stop
// first (their final readings go to the House), then it launches.
func (r *Router) Start(ctx context.Context, s protocol.Start, done func(protocol.Started, error)) {
	id := s.Contract.Server
	r.mu.Lock()
	mute := r.mute[id] || r.Silent[id]
	r.mu.Unlock()
	if mute {
		done(protocol.Started{}, errSilent)
		return
	}
	started, _, err := r.Nodes[id].Begin(ctx, r.h.Now, s, func(stops []server.Stop) { r.stop(id, stops) })
	done(started, err)
}

func (r *Router) Cancel(server, offer string) { r.Nodes[server].Cancel(r.h.Now(), offer) }

func (r *Router) Control(_ context.Context, c contract.Contract, action contract.Reason, done func(error)) {
	err := errSilent
	switch {
	case r.ignores(c.Server):
		err = nil
	case !r.silent(c.Server):
		err = r.Nodes[c.Server].Control(r.h.Now(), c.ID, action)
	}
	if done != nil {
		done(err)
	}
}

// stop stops jobs as an agent does, and hands the House their final
// readings.
func (r *Router) stop(id string, stops []server.Stop) {
	ctx := context.Background()
	r.Nodes[id].StopJobs(ctx, r.h.Now, stops, func(f contract.Reading) { _ = r.h.House.Count(ctx, id, f) })
}
