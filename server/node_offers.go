package server

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// claim is an accepted offer's GPUs, reserved until the exchange starts or
// cancels it, or until it lapses.
type claim struct {
	terms contract.Terms
	gpus  []int
	until time.Time
	// preempt are the runs whose GPUs the claim took, to be stopped with
	// reason preempted when the contract starts.
	preempt []*run
}

// issued is a counter-offer this node made, honoured until it lapses.
type issued struct {
	terms contract.Terms
	until time.Time
}

// Decide answers an offer the exchange routes here: accept (its GPUs
// claimed for ClaimFor), or reject with the policy's reason and the
// counter-offers the node will honour. A counter-offer of the node's,
// taken unchanged in time, is accepted whatever the policy says now, if
// the GPUs are there.
func (n *Node) Decide(now time.Time, so protocol.ServerOffer) protocol.Decision {
	return n.decide(now, so, true)
}

// Quote answers a quote: what Decide would answer the offer now, claiming
// no GPU and booking no slot, so that a client may learn prices without
// binding anyone. An accept says that the policy takes the terms and the
// GPUs are there at this moment (its ClaimFor is zero: nothing is claimed).
// A rejection's counter-offers are remembered as Decide's are, so that
// the client may take one while it is valid; a counter-offer the node
// made is quoted as Decide would honour it.
func (n *Node) Quote(now time.Time, so protocol.ServerOffer) protocol.Decision {
	return n.decide(now, so, false)
}

// decide is Decide's answer where bind is set, and Quote's where it is
// not: the same path, which claims GPUs or books a slot only when it binds
// (take, reserve).
func (n *Node) decide(now time.Time, so protocol.ServerOffer, bind bool) (reply protocol.Decision) {
	if d, refused := n.refuse(so); refused {
		return d
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.sweep(now)
	if n.closing {
		return protocol.Decision{Reason: "the server is shutting down", Code: bourse.EUnavailable}
	}
	if bind {
		// A retried offer gets the answer it had.
		if h, ok := n.claims[so.Offer]; ok && h.terms.Equal(so.Terms) {
			return protocol.Decision{Accept: true, ClaimFor: contract.Duration(h.until.Sub(now))}
		}
		if b, ok := n.bookings[so.Offer]; ok && b.terms.Equal(so.Terms) {
			return n.accepted(bind)
		}
	}
	c, ok := n.counters[so.Counter]
	honoured := ok && so.Counter != "" && c.terms.Equal(so.Terms)
	if bind {
		// A learner hears each offer decided once (a retry is answered
		// above), after its GPUs are claimed; quotes bind nothing and
		// teach nothing.
		defer func() {
			n.observe(Outcome{Kind: OutcomeOffer, Now: now, Terms: so.Terms, Accepted: reply.Accept, Counter: honoured, Countered: len(reply.Counters)})
		}()
	}
	if so.Terms.StartAt.After(now) {
		return n.decideBooking(so, now, honoured, bind)
	}
	if honoured {
		// The node promised these terms; only capacity can break it.
		if n.take(so, now, nil, bind) {
			return n.accepted(bind)
		}
		// The GPUs may be the preemptible contracts', as the counter's
		// were when it was made.
		if d := n.policy.Decide(so.Terms, n.view(now, so.Terms.Client)); d.Accept && len(d.Preempt) > 0 && n.take(so, now, d.Preempt, bind) {
			return n.accepted(bind)
		}
		return protocol.Decision{Reason: "the counter-offer's GPUs were taken meanwhile", Code: bourse.ECapacityGone}
	}
	d := n.policy.Decide(so.Terms, n.view(now, so.Terms.Client))
	if d.Accept {
		if n.take(so, now, d.Preempt, bind) {
			return n.accepted(bind)
		}
		return protocol.Decision{Reason: "not enough free GPUs of the class"}
	}
	return n.reject(d, now)
}

// take claims GPUs for the offer where it binds (claim), and otherwise
// reports whether it could. n.mu is held.
func (n *Node) take(so protocol.ServerOffer, now time.Time, preempt []string, bind bool) bool {
	if !so.Terms.StartAt.After(now) && !n.slotFree(len(preempt)) {
		return false // GPUs, but no job user to run a job on them
	}
	if bind {
		return n.claim(so, now, preempt)
	}
	victims, ok := n.victims(preempt)
	return ok && n.pickFor(so.Terms, now, victims...) != nil
}

// refuse answers terms the node cannot take whatever its GPUs and
// prices: invalid, naming another server, or a job its runner cannot run.
func (n *Node) refuse(so protocol.ServerOffer) (protocol.Decision, bool) {
	if err := contract.Validate(so.Terms, n.scaleOf); err != nil {
		return protocol.Decision{Reason: err.Error(), Code: bourse.ErrorCode(err)}, true
	}
	if so.Terms.Server != "" && so.Terms.Server != n.cfg.ID {
		return protocol.Decision{Reason: fmt.Sprintf("the offer names server %q", so.Terms.Server), Code: bourse.EInvalidOffer}, true
	}
	if n.takes != nil {
		if err := (*contract.Runs)(n.takes).Refuses(so.Terms.Job); err != nil {
			return protocol.Decision{Reason: bourse.ErrorMessage(err), Code: bourse.ErrorCode(err)}, true
		}
	}
	if c, ok := n.runner.(Checker); ok {
		if err := c.Check(so.Terms.Job); err != nil {
			return protocol.Decision{Reason: bourse.ErrorMessage(err), Code: bourse.ErrorCode(err)}, true
		}
	}
	return protocol.Decision{}, false
}

// reject answers a policy's no: its reason and code, and its counter-offers,
// remembered so that the node honours them when taken. n.mu is held.
func (n *Node) reject(d Decision, now time.Time) protocol.Decision {
	reply := protocol.Decision{Reason: d.Reason, Code: d.Code}
	until := d.ValidUntil
	if !until.After(now) {
		until = now.Add(DefaultCounterTTL)
	}
	for _, t := range d.Counters {
		t.Server = n.cfg.ID
		c := contract.Counter{ID: n.cfg.NewID(), Server: n.cfg.ID, Terms: t, ValidUntil: until, Note: d.Reason}
		n.counters[c.ID] = issued{terms: t, until: until}
		if n.countersLapse.IsZero() || until.Before(n.countersLapse) {
			n.countersLapse = until
		}
		reply.Counters = append(reply.Counters, c)
	}
	return reply
}

// accepted is an accept: one that binds holds its GPUs for ClaimFor; a
// quote's holds nothing.
func (n *Node) accepted(bind bool) protocol.Decision {
	if !bind {
		return protocol.Decision{Accept: true}
	}
	return protocol.Decision{Accept: true, ClaimFor: contract.Duration(n.cfg.ClaimFor)}
}

// claim reserves free GPUs for the offer, and reports whether there were
// enough. With preempt, the running preemptible contracts it names give up
// their GPUs where the free ones are too few; they stop when the contract
// starts, or keep their GPUs should the claim lapse. An earlier claim
// under the same offer id, for other terms, is replaced. n.mu is held.
func (n *Node) claim(so protocol.ServerOffer, now time.Time, preempt []string) bool {
	n.release(so.Offer)
	victims, ok := n.victims(preempt)
	if !ok {
		return false
	}
	gpus := n.pickFor(so.Terms, now, victims...)
	if gpus == nil {
		return false
	}
	for _, i := range gpus {
		n.own(i, "claim "+so.Offer)
	}
	for _, r := range victims {
		r.claimed = so.Offer
	}
	n.runsValid = false
	n.claims[so.Offer] = &claim{terms: so.Terms, gpus: gpus, until: now.Add(n.cfg.ClaimFor), preempt: victims}
	return true
}

// victims are the running preemptible contracts preempt names, and
// whether each may still give way (none is claimed or stopping). n.mu
// is held.
func (n *Node) victims(preempt []string) ([]*run, bool) {
	var victims []*run
	for _, id := range preempt {
		r, ok := n.active[id]
		if !ok || !r.terms.Preemptible || r.claimed != "" || r.halting != "" {
			return nil, false
		}
		victims = append(victims, r)
	}
	return victims, true
}

// own gives GPU i to owner ("claim …" or "run …"), or frees it if owner is
// empty. n.mu is held.
func (n *Node) own(i int, owner string) {
	if owner == "" {
		delete(n.owner, i)
	} else {
		n.owner[i] = owner
	}
	n.freeValid, n.runsValid = false, false
}

// pickFor chooses GPUs for terms that start now. A guaranteed job may not
// have GPUs booked for a slot that begins before its time limit could end;
// a preemptible one may, and gets them only when others are too few. n.mu
// is held.
func (n *Node) pickFor(t contract.Terms, now time.Time, victims ...*run) []int {
	booked := n.bookedDuring(now, now.Add(n.cfg.ClaimFor+t.TimeLimit))
	gpus := n.pick(t.Class, t.GPUs, booked, victims...)
	if gpus == nil && t.Preemptible && len(booked) > 0 {
		gpus = n.pick(t.Class, t.GPUs, nil, victims...)
	}
	return gpus
}

// pick chooses n free GPUs of the class, lowest indexes first, then GPUs
// of the class that the runs of victims use, or returns nil; never those
// in avoid. n.mu is held.
func (n *Node) pick(c contract.Class, want int, avoid map[int]bool, victims ...*run) []int {
	var out []int
	for _, g := range n.cfg.GPUs {
		if len(out) == want {
			break
		}
		if _, used := n.owner[g.Index]; !used && c.Fits(g.Model, g.MemoryMiB) && !avoid[g.Index] {
			out = append(out, g.Index)
		}
	}
	for _, g := range n.cfg.GPUs {
		if len(out) == want {
			break
		}
		if c.Fits(g.Model, g.MemoryMiB) && !avoid[g.Index] && slices.ContainsFunc(victims, func(r *run) bool { return n.owner[g.Index] == "run "+r.id }) {
			out = append(out, g.Index)
		}
	}
	if len(out) < want || want < 1 {
		return nil
	}
	return out
}

// Cancel releases the claim of an accept the exchange did not take.
func (n *Node) Cancel(now time.Time, offer string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.release(offer)
	if b, ok := n.bookings[offer]; ok && b.contract == "" {
		delete(n.bookings, offer)
	}
	n.observe(Outcome{Kind: OutcomeTime, Now: now}) // GPUs free again
}

// release drops an offer's claim. n.mu is held.
func (n *Node) release(offer string) {
	h, ok := n.claims[offer]
	if !ok {
		return
	}
	for _, i := range h.gpus {
		n.own(i, "")
		// A GPU taken from a run that still runs goes back to it.
		for _, r := range h.preempt {
			if !r.ended && slices.Contains(r.started.GPUs, i) {
				n.own(i, "run "+r.id)
			}
		}
	}
	for _, r := range h.preempt {
		r.claimed = ""
	}
	n.runsValid = false
	delete(n.claims, offer)
}

// sweep drops lapsed claims and counters, and forgets runs that ended long
// ago. n.mu is held.
func (n *Node) sweep(now time.Time) {
	// Released in order of offer id, so that GPUs taken back from
	// preempted runs go back alike in alike states; sorted only when one
	// has lapsed, since the sweep runs before every decision.
	for _, c := range n.claims {
		if !now.Before(c.until) {
			for _, id := range slices.Sorted(maps.Keys(n.claims)) {
				if !now.Before(n.claims[id].until) {
					n.release(id)
				}
			}
			break
		}
	}
	// Counters pile up under load (a rejection makes one, and they stand
	// for their TTL): they are looked through only once the first of them
	// has lapsed, not before every decision.
	if !n.countersLapse.IsZero() && !now.Before(n.countersLapse) {
		n.countersLapse = time.Time{}
		for id, c := range n.counters {
			if !now.Before(c.until) {
				delete(n.counters, id)
			} else if n.countersLapse.IsZero() || c.until.Before(n.countersLapse) {
				n.countersLapse = c.until
			}
		}
	}
	for id, b := range n.bookings {
		if b.contract == "" && !now.Before(b.until) {
			delete(n.bookings, id)
		}
	}
	// Ended runs are kept in the order they ended, so the newly ended are
	// last, and forgetting the old ones costs nothing per offer when there
	// are none.
	for i := len(n.ended) - 1; i >= 0 && !n.ended[i].counted; i-- {
		r := n.ended[i]
		r.counted = true
		n.clients.ended(r.terms.Client, r.endedAt, r.halting)
	}
	n.clients.prune(now)
	for len(n.ended) > 0 && now.Sub(n.ended[0].endedAt) > forgetAfter {
		delete(n.runs, n.ended[0].id)
		n.ended[0] = nil
		n.ended = n.ended[1:]
	}
}

// forgetAfter is how long an ended run still answers a repeated start or
// control: longer than any retry of the exchange's.
const forgetAfter = 10 * time.Minute

// view is what the policy sees of an offer of client's. n.mu is held.
func (n *Node) view(now time.Time, client string) View {
	if !n.freeValid {
		n.free = n.free[:0]
		for _, g := range n.cfg.GPUs {
			if _, used := n.owner[g.Index]; !used {
				n.free = append(n.free, g)
			}
		}
		n.freeValid = true
	}
	// Clipped, so that a policy appending to it cannot write into the cache.
	// The running list is cached too, for the same reason, until a run
	// starts, stops, is halted or is claimed for a preemption (runsStale).
	if !n.runsValid {
		n.running = n.running[:0]
		for _, r := range n.active {
			if r.claimed == "" && r.halting == "" {
				n.running = append(n.running, Run{ID: r.id, Terms: r.terms, GPUs: r.started.GPUs, Started: r.started.At})
			}
		}
		// In a fixed order, so that a policy decides alike in alike states.
		slices.SortFunc(n.running, func(x, y Run) int { return strings.Compare(x.ID, y.ID) })
		n.runsValid = true
	}
	v := View{Now: now, Scale: n.cfg.Currency.Scale, GPUs: n.cfg.GPUs, Recent: n.recent, Free: slices.Clip(n.free),
		Client: n.clientUse(client)}
	if len(n.running) > 0 {
		v.Running = slices.Clip(n.running)
	}
	for _, b := range n.bookings {
		if !b.starting {
			v.Bookings = append(v.Bookings, b.view())
		}
	}
	slices.SortFunc(v.Bookings, func(x, y Booking) int { return strings.Compare(x.ID, y.ID) })
	return v
}
