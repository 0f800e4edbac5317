package housetest

import (
	"context"
	"errors"
	"iter"
	"slices"
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
// like one that hung, and so does one the harness has no node for.
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
	// queueing are the servers whose readings wait in the transport, and
	// queued those readings, in order (QueueReadings).
	queueing map[string]bool
	queued   map[string][]contract.Reading
	// backlogDown fails Holds; backlogAsked counts its calls.
	backlogDown  bool
	backlogAsked int
	// mute are the servers that decide offers but never answer a start,
	// like one that hung after its accept (MuteStarts).
	mute map[string]bool
	// deaf are the servers that confirm a kill or suspend and carry on
	// regardless (IgnoreControls).
	deaf map[string]bool
	// hung are the servers that take offers and never answer them, each
	// costing the House its Negotiation on the clock (Hang).
	hung map[string]bool
	// offered are the offer ids each server was sent, in order
	// (OfferIDs).
	offered map[string][]string
	// stalled are the servers whose next answer waits for its release
	// (Stall).
	stalled map[string]*stall
	// signers sign each server's accepts and readings (Sign).
	signers map[string]func([]byte) string
}

// stall is one answer held back: asked is closed once the server has
// decided, release lets the answer go.
type stall struct {
	asked, release chan struct{}
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

// QueueReadings has server's readings wait in the transport from now on,
// not delivered and not lost, as readings wait in the usage stream while
// the instance that took them is paused holding them: Holds says so, and
// Harness.ReleaseReadings delivers them.
func (r *Router) QueueReadings(server string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.queueing == nil {
		r.queueing, r.queued = map[string]bool{}, map[string][]contract.Reading{}
	}
	r.queueing[server] = true
}

// queue keeps server's reading rd if its readings wait, and says so.
func (r *Router) queue(server string, rd contract.Reading) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.queueing[server] {
		return false
	}
	r.queued[server] = append(r.queued[server], rd)
	return true
}

// Holds is the Router as the House's Backlog: whether server's readings
// wait in it. It counts its calls (BacklogAsked), and fails while the
// backlog is down (BacklogDown).
func (r *Router) Holds(_ context.Context, server string) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.backlogAsked++
	if r.backlogDown {
		return false, errors.New("housetest: the backlog does not answer")
	}
	return len(r.queued[server]) > 0, nil
}

// BacklogDown has Holds fail (or answer again), as the usage stream
// that does not answer.
func (r *Router) BacklogDown(down bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.backlogDown = down
}

// BacklogAsked is how many times Holds was called.
func (r *Router) BacklogAsked() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.backlogAsked
}

// Silence makes server silent (or speak again): it answers nothing and
// sends nothing.
func (r *Router) Silence(server string, silent bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Silent[server] = silent
}

// offeredTo records that servers were sent offer id.
func (r *Router) offeredTo(id string, servers []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.offered == nil {
		r.offered = map[string][]string{}
	}
	for _, s := range servers {
		r.offered[s] = append(r.offered[s], id)
	}
}

// OfferIDs are the offer ids server was sent, to decide or to quote, in
// order.
func (r *Router) OfferIDs(server string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.offered[server])
}

// Stall holds server's answer to the next offer it is asked: the server
// decides at once (an accept claims its GPUs), but the House hears the
// answer only once release is called, as when a server is slow to
// answer. asked is closed when the server has decided. release may be
// called more than once.
func (r *Router) Stall(server string) (asked <-chan struct{}, release func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stalled == nil {
		r.stalled = map[string]*stall{}
	}
	s := &stall{asked: make(chan struct{}), release: make(chan struct{})}
	r.stalled[server] = s
	var once sync.Once
	return s.asked, func() { once.Do(func() { close(s.release) }) }
}

// stallOf takes server's stall, if it has one.
func (r *Router) stallOf(server string) *stall {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.stalled[server]
	delete(r.stalled, server)
	return s
}

// Sign has server sign its accepts (the offer and the answer, as
// protocol.AcceptSigned joins them) and its readings with sign, as a
// server with a signing key does; nil for no signature. Its readings
// then reach the House as they travel (House.Reading: the bytes, the
// message id and the signature), so that a Config.Verifier checks them.
func (r *Router) Sign(server string, sign func([]byte) string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.signers == nil {
		r.signers = map[string]func([]byte) string{}
	}
	r.signers[server] = sign
}

func (r *Router) signer(server string) (func([]byte) string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	sign, ok := r.signers[server]
	return sign, ok
}

// AskedOf is how many offers server was asked to decide.
func (r *Router) AskedOf(server string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.Asked[server]
}

// silent says whether server answers nothing: it is Silent, or the
// harness has no node of that name (a server gone).
func (r *Router) silent(server string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.Silent[server] || r.Nodes[server] == nil
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
	r.offeredTo(offer.Offer, servers)
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
	r.offeredTo(offer.Offer, servers)
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
				a.Signed = r.signed(s, offer, a.Decision)
			}
			if st := r.stallOf(s); st != nil {
				close(st.asked)
				<-st.release
			}
			if !yield(a) {
				return
			}
		}
	}
}

// signed is the answer as a router over NATS hands it on: the offer and
// the decision as they travelled, signed by the server if it signs.
func (r *Router) signed(server string, offer protocol.ServerOffer, d protocol.Decision) *contract.Signed {
	sign, ok := r.signer(server)
	if !ok {
		return nil
	}
	o, _ := protocol.Marshal(offer)
	a, _ := protocol.Marshal(d)
	body := protocol.AcceptSigned(o, a)
	sig := ""
	if sign != nil {
		sig = sign(body)
	}
	return &contract.Signed{Body: body, Sig: sig}
}

// Start starts the job as an agent would: the jobs it preempts stop
// first (their final readings go to the House), then it launches.
func (r *Router) Start(ctx context.Context, s protocol.Start, done func(protocol.Started, error)) {
	id := s.Contract.Server
	r.mu.Lock()
	mute := r.mute[id] || r.Silent[id] || r.Nodes[id] == nil
	r.mu.Unlock()
	if mute {
		done(protocol.Started{}, errSilent)
		return
	}
	started, _, err := r.Nodes[id].Begin(ctx, r.h.Now, s, func(stops []server.Stop) { r.stop(id, stops) })
	done(started, err)
}

func (r *Router) Cancel(server, offer string) {
	if n := r.Nodes[server]; n != nil {
		n.Cancel(r.h.Now(), offer)
	}
}

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
	r.Nodes[id].StopJobs(ctx, r.h.Now, stops, func(f contract.Reading) {
		if !r.queue(id, f) {
			_ = r.h.deliver(ctx, id, f)
		}
	})
}
