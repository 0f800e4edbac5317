package server

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// booking is an accepted offer for a future slot. Its GPUs are not owned
// until the slot begins: preemptible jobs, and guaranteed ones that end in
// time, use them meanwhile. Guarded by the node's mu.
type booking struct {
	offer    string
	terms    contract.Terms
	gpus     []int
	until    time.Time // when an unconfirmed booking lapses, like a claim
	contract string    // set by the exchange's Start
	resumes  string
	starting bool // its slot began: its run is prepared
}

func (b *booking) view() Booking {
	id := b.contract
	if id == "" {
		id = b.offer
	}
	return Booking{ID: id, Terms: b.terms, GPUs: b.gpus}
}

func (b *booking) started() protocol.Started {
	return protocol.Started{Contract: b.contract, GPUs: b.gpus, At: b.terms.StartAt, Booked: true}
}

// decideBooking decides on an offer that starts in the future: the policy
// must take it as a booking (Decision.Book), and GPUs must be free for its
// slot. n.mu is held.
func (n *Node) decideBooking(so protocol.ServerOffer, now time.Time, honoured, bind bool) protocol.Decision {
	if honoured {
		if n.reserve(so, now, bind) {
			return n.accepted(bind)
		}
		return protocol.Decision{Reason: "the counter-offer's GPUs were booked meanwhile", Code: bourse.ECapacityGone}
	}
	d := n.policy.Decide(so.Terms, n.view(now, so.Terms.Client))
	switch {
	case d.Accept && !d.Book:
		return protocol.Decision{Reason: "this server takes no bookings: leave start_at out"}
	case d.Accept:
		if n.reserve(so, now, bind) {
			return n.accepted(bind)
		}
		return protocol.Decision{Reason: "not enough GPUs of the class free for the slot"}
	}
	return n.reject(d, now)
}

// reserve books the offer's slot where it binds (book), and otherwise
// reports whether it could. n.mu is held.
func (n *Node) reserve(so protocol.ServerOffer, now time.Time, bind bool) bool {
	if bind {
		return n.book(so, now)
	}
	return n.slot(so.Terms, now) != nil
}

// book reserves GPUs free for the offer's slot, lowest indexes first, and
// reports whether there were enough. n.mu is held.
func (n *Node) book(so protocol.ServerOffer, now time.Time) bool {
	delete(n.bookings, so.Offer)
	gpus := n.slot(so.Terms, now)
	if gpus == nil {
		return false
	}
	n.bookings[so.Offer] = &booking{offer: so.Offer, terms: so.Terms, gpus: gpus, until: now.Add(n.cfg.ClaimFor)}
	return true
}

// slot picks GPUs of t's class free for t's slot, lowest indexes first,
// or nil if there are too few. n.mu is held.
func (n *Node) slot(t contract.Terms, now time.Time) []int {
	var gpus []int
	for _, g := range n.view(now, t.Client).FreeDuring(t.StartAt, t.StartAt.Add(t.TimeLimit)) {
		if len(gpus) < t.GPUs && t.Class.Fits(g.Model, g.MemoryMiB) {
			gpus = append(gpus, g.Index)
		}
	}
	if len(gpus) < t.GPUs {
		return nil
	}
	return gpus
}

// bookedDuring reports the GPUs of bookings whose slots overlap
// [from, to). n.mu is held.
func (n *Node) bookedDuring(from, to time.Time) map[int]bool {
	if len(n.bookings) == 0 {
		return nil
	}
	v := View{}
	for _, b := range n.bookings {
		if !b.starting {
			v.Bookings = append(v.Bookings, b.view())
		}
	}
	return v.booked(from, to)
}

// confirmBooking answers the exchange's Start of a booked contract: it
// keeps the GPUs for the slot, to start the job at start_at (Tick); the
// answer is Started with Booked. It reports false for a contract that is
// not a booking, or whose start is due. n.mu is held.
func (n *Node) confirmBooking(now time.Time, s protocol.Start) (protocol.Started, bool, error) {
	const op = "server.Start"
	id, t := s.Contract.ID, s.Contract.Terms
	if _, ok := n.runs[id]; ok {
		return protocol.Started{}, false, nil
	}
	b, ok := n.bookings[s.Offer]
	if ok && b.contract != "" {
		return b.started(), true, nil // a repeated start
	}
	if !t.StartAt.After(now) {
		return protocol.Started{}, false, nil
	}
	if n.closing {
		return protocol.Started{}, true, bourse.Errorf(bourse.EUnavailable, op, "the server is shutting down")
	}
	if err := contract.Validate(t, n.scaleOf); err != nil {
		return protocol.Started{}, true, err
	}
	if !ok || !b.terms.Equal(t) {
		// The booking lapsed, or was for other terms: book anew.
		if !n.book(protocol.ServerOffer{Offer: s.Offer, Terms: t}, now) {
			return protocol.Started{}, true, bourse.Errorf(bourse.ECapacityGone, op, "the booking lapsed and %d GPUs of the class are not free for its slot", t.GPUs)
		}
		b = n.bookings[s.Offer]
	}
	b.contract, b.resumes, b.until = id, s.Contract.Resumes, time.Time{}
	n.bookGen++
	n.log.Info("booked", "contract", id, "client", t.Client, "gpus", b.gpus, "start", t.StartAt)
	return b.started(), true, nil
}

// dueBookings prepares the runs of the confirmed bookings whose slot has
// begun: claims on their GPUs are released, and preemptible jobs on them
// preempted (the stops); a booking whose GPUs a guaranteed job holds is
// dropped, and the exchange voids its contract at its start deadline.
// n.mu is held.
func (n *Node) dueBookings(now time.Time) (stops []Stop, launch []string) {
	waiting := func(b *booking) bool {
		return b.contract == "" || b.starting || b.terms.StartAt.After(now) || n.closing
	}
	// Most ticks start no booking: sort the offers only when one is due.
	ready := false
	for _, b := range n.bookings {
		ready = ready || !waiting(b)
	}
	if !ready {
		return nil, nil
	}
	for _, offer := range slices.Sorted(maps.Keys(n.bookings)) {
		b := n.bookings[offer]
		if waiting(b) {
			continue
		}
		var victims []*run
		var blocked string
		for _, i := range b.gpus {
			owner := n.owner[i]
			if id, ok := strings.CutPrefix(owner, "claim "); ok {
				n.release(id) // its start finds other GPUs, or none
				owner = n.owner[i]
			}
			id, ok := strings.CutPrefix(owner, "run ")
			if !ok {
				continue
			}
			r := n.active[id]
			switch {
			case r == nil:
			case !r.terms.Preemptible:
				blocked = id
			case !slices.Contains(victims, r):
				if r.claimed != "" {
					n.release(r.claimed)
				}
				victims = append(victims, r)
			}
		}
		delete(n.bookings, offer)
		n.bookGen++
		if blocked != "" {
			n.log.Error("booked GPUs are taken by a guaranteed job", "contract", b.contract, "by", blocked)
			continue
		}
		b.starting = true
		stops = append(stops, n.prepare(b.contract, b.terms, b.resumes, b.gpus, victims)...)
		launch = append(launch, b.contract)
	}
	return stops, launch
}

// cancelBooking drops the booking of a contract that has not started, for
// a client's kill or suspend or the exchange's void, and reports whether
// there was one. n.mu is held.
func (n *Node) cancelBooking(contractID string, action contract.Reason) bool {
	for _, id := range slices.Sorted(maps.Keys(n.bookings)) {
		if b := n.bookings[id]; b.contract == contractID {
			delete(n.bookings, id)
			n.bookGen++
			n.log.Info("booking cancelled", "contract", contractID, "action", action)
			return true
		}
	}
	return false
}
