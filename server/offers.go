package server

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/trade"
)

// hold is an accepted offer's GPUs, reserved until the exchange starts or
// cancels it, or until it lapses.
type hold struct {
	terms contract.Terms
	gpus  []int
	until time.Time
	// preempt are the runs whose GPUs the hold took, to be stopped with
	// reason preempted when the contract starts.
	preempt []*run
}

// issued is a counter-offer this agent made, honoured until it lapses.
type issued struct {
	terms contract.Terms
	until time.Time
}

// onOffer decides on a protocol.ServerOffer and answers a protocol.Decision.
func (a *Agent) onOffer(m *nats.Msg) {
	var so protocol.ServerOffer
	if err := decode(m, &so); err != nil {
		a.respond(m, protocol.Decision{Reason: bourse.ErrorMessage(err), Code: bourse.ErrorCode(err)})
		return
	}
	d := a.decide(so)
	a.log.Debug("offer", "offer", so.Offer, "client", so.Terms.Client, "accept", d.Accept,
		"counters", len(d.Counters), "reason", d.Reason)
	a.respond(m, d)
}

func (a *Agent) decide(so protocol.ServerOffer) protocol.Decision {
	if err := contract.Validate(so.Terms, a.scaleOf); err != nil {
		return protocol.Decision{Reason: err.Error(), Code: bourse.ErrorCode(err)}
	}
	if so.Terms.Server != "" && so.Terms.Server != a.id {
		return protocol.Decision{Reason: fmt.Sprintf("the offer names server %q", so.Terms.Server), Code: bourse.EInvalidOffer}
	}
	if c, ok := a.runner.(Checker); ok {
		if err := c.Check(so.Terms.Job); err != nil {
			return protocol.Decision{Reason: bourse.ErrorMessage(err), Code: bourse.ErrorCode(err)}
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	a.sweep(now)
	if a.closing {
		return protocol.Decision{Reason: "the server is shutting down", Code: bourse.EUnavailable}
	}
	// A retried offer gets the answer it had.
	if h, ok := a.holds[so.Offer]; ok && h.terms.Equal(so.Terms) {
		return protocol.Decision{Accept: true, HoldFor: trade.Duration(h.until.Sub(now))}
	}
	if b, ok := a.bookings[so.Offer]; ok && b.terms.Equal(so.Terms) {
		return a.accepted()
	}
	if so.Terms.StartAt.After(now) {
		return a.decideBooking(so, now)
	}
	if c, ok := a.counters[so.Counter]; ok && so.Counter != "" && c.terms.Equal(so.Terms) {
		// The agent promised these terms; only capacity can break it.
		if a.reserve(so, now, nil) {
			return a.accepted()
		}
		// The GPUs may be the preemptible contracts', as the counter's
		// were when it was made.
		if d := a.policy.Decide(so.Terms, a.state(now, so.Terms.Client)); d.Accept && len(d.Preempt) > 0 && a.reserve(so, now, d.Preempt) {
			return a.accepted()
		}
		return protocol.Decision{Reason: "the counter-offer's GPUs were taken meanwhile", Code: bourse.ECapacityGone}
	}
	d := a.policy.Decide(so.Terms, a.state(now, so.Terms.Client))
	if d.Accept {
		if a.reserve(so, now, d.Preempt) {
			return a.accepted()
		}
		return protocol.Decision{Reason: "not enough free GPUs of the class"}
	}
	return a.reject(d, now)
}

// reject answers a policy's no: its reason and code, and its counter-offers,
// remembered so that the agent honours them when taken. a.mu is held.
func (a *Agent) reject(d Decision, now time.Time) protocol.Decision {
	reply := protocol.Decision{Reason: d.Reason, Code: d.Code}
	until := d.ValidUntil
	if !until.After(now) {
		until = now.Add(DefaultCounterTTL)
	}
	for _, t := range d.Counters {
		t.Server = a.id
		c := trade.Counter{ID: nuid.Next(), Server: a.id, Terms: t, ValidUntil: until, Note: d.Reason}
		a.counters[c.ID] = issued{terms: t, until: until}
		reply.Counters = append(reply.Counters, c)
	}
	return reply
}

// scaleOf knows one currency, the server's: offers in others are invalid
// here.
func (a *Agent) scaleOf(code string) (int32, bool) {
	return a.cfg.Currency.Scale, code == string(a.cfg.Currency.Code)
}

func (a *Agent) accepted() protocol.Decision {
	return protocol.Decision{Accept: true, HoldFor: trade.Duration(a.cfg.HoldFor)}
}

// reserve holds free GPUs for the offer, and reports whether there were
// enough. With preempt, the running preemptible contracts it names give up
// their GPUs where the free ones are too few; they stop when the contract
// starts, or keep their GPUs should the hold lapse. An earlier hold under
// the same offer id, for other terms, is replaced. a.mu is held.
func (a *Agent) reserve(so protocol.ServerOffer, now time.Time, preempt []string) bool {
	a.release(so.Offer)
	var victims []*run
	for _, id := range preempt {
		r, ok := a.active[id]
		if !ok || !r.terms.Preemptible || r.claimed != "" {
			return false
		}
		victims = append(victims, r)
	}
	gpus := a.pickFor(so.Terms, now, victims...)
	if gpus == nil {
		return false
	}
	for _, i := range gpus {
		a.owner[i] = "offer " + so.Offer
		a.freeValid = false
	}
	for _, r := range victims {
		r.claimed = so.Offer
	}
	a.holds[so.Offer] = &hold{terms: so.Terms, gpus: gpus, until: now.Add(a.cfg.HoldFor), preempt: victims}
	return true
}

// pickFor chooses GPUs for terms that start now. A guaranteed job may not
// have GPUs booked for a slot that begins before its time limit could end;
// a preemptible one may, and gets them only when others are too few. a.mu
// is held.
func (a *Agent) pickFor(t contract.Terms, now time.Time, victims ...*run) []int {
	booked := a.bookedDuring(now, now.Add(a.cfg.HoldFor+t.TimeLimit))
	gpus := a.pick(t.Class, t.GPUs, booked, victims...)
	if gpus == nil && t.Preemptible && len(booked) > 0 {
		gpus = a.pick(t.Class, t.GPUs, nil, victims...)
	}
	return gpus
}

// pick chooses n free GPUs of the class, lowest indexes first, then GPUs
// of the class that the runs of victims use, or returns nil; never those
// in avoid. a.mu is held.
func (a *Agent) pick(c contract.Class, n int, avoid map[int]bool, victims ...*run) []int {
	var out []int
	for _, g := range a.cfg.GPUs {
		if len(out) == n {
			break
		}
		if _, used := a.owner[g.Index]; !used && Fits(c, g) && !avoid[g.Index] {
			out = append(out, g.Index)
		}
	}
	for _, g := range a.cfg.GPUs {
		if len(out) == n {
			break
		}
		if Fits(c, g) && !avoid[g.Index] && slices.ContainsFunc(victims, func(r *run) bool { return a.owner[g.Index] == "run "+r.id }) {
			out = append(out, g.Index)
		}
	}
	if len(out) < n || n < 1 {
		return nil
	}
	return out
}

// onCancel releases the hold of an accept the exchange did not take.
func (a *Agent) onCancel(m *nats.Msg) {
	var c protocol.Cancel
	if err := decode(m, &c); err != nil {
		a.log.Warn("cancel", "err", err)
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.release(c.Offer)
	if b, ok := a.bookings[c.Offer]; ok && b.contract == "" {
		delete(a.bookings, c.Offer)
	}
}

// release drops an offer's hold. a.mu is held.
func (a *Agent) release(offer string) {
	h, ok := a.holds[offer]
	if !ok {
		return
	}
	for _, i := range h.gpus {
		delete(a.owner, i)
		a.freeValid = false
		// A GPU taken from a run that still runs goes back to it.
		for _, r := range h.preempt {
			if !r.ended && slices.Contains(r.started.GPUs, i) {
				a.owner[i] = "run " + r.id
			}
		}
	}
	for _, r := range h.preempt {
		r.claimed = ""
	}
	delete(a.holds, offer)
}

// sweep drops lapsed holds and counters, and forgets runs that ended long
// ago. a.mu is held.
func (a *Agent) sweep(now time.Time) {
	for id, h := range a.holds {
		if !now.Before(h.until) {
			a.release(id)
		}
	}
	for id, c := range a.counters {
		if !now.Before(c.until) {
			delete(a.counters, id)
		}
	}
	for id, b := range a.bookings {
		if b.contract == "" && !now.Before(b.until) {
			delete(a.bookings, id)
		}
	}
	// Ended runs are kept in the order they ended, so the newly ended are
	// last, and forgetting the old ones costs nothing per offer when there
	// are none.
	for i := len(a.ended) - 1; i >= 0 && !a.ended[i].booked; i-- {
		r := a.ended[i]
		r.booked = true
		a.clients.ended(r.terms.Client, r.endedAt, r.reason)
	}
	a.clients.prune(now)
	for len(a.ended) > 0 && now.Sub(a.ended[0].endedAt) > forgetAfter && a.ended[0].published {
		delete(a.runs, a.ended[0].id)
		a.ended[0] = nil
		a.ended = a.ended[1:]
	}
}

// forgetAfter is how long an ended run still answers a repeated start or
// control: longer than any retry of the exchange's.
const forgetAfter = 10 * time.Minute

// state is what the policy sees of an offer of client's. a.mu is held.
func (a *Agent) state(now time.Time, client string) State {
	if !a.freeValid {
		a.free = a.free[:0]
		for _, g := range a.cfg.GPUs {
			if _, used := a.owner[g.Index]; !used {
				a.free = append(a.free, g)
			}
		}
		a.freeValid = true
	}
	// Clipped, so that a policy appending to it cannot write into the cache.
	st := State{Now: now, Scale: a.cfg.Currency.Scale, GPUs: a.cfg.GPUs, Recent: a.recent, Free: slices.Clip(a.free),
		Client: a.clientUse(client)}
	for _, r := range a.active {
		if r.claimed == "" {
			st.Running = append(st.Running, Run{ID: r.id, Terms: r.terms, GPUs: r.started.GPUs, Started: r.started.At})
		}
	}
	for _, b := range a.bookings {
		if !b.starting {
			st.Bookings = append(st.Bookings, b.view())
		}
	}
	// In a fixed order, so that a policy decides alike in alike states.
	slices.SortFunc(st.Running, func(x, y Run) int { return strings.Compare(x.ID, y.ID) })
	slices.SortFunc(st.Bookings, func(x, y Booking) int { return strings.Compare(x.ID, y.ID) })
	return st
}
