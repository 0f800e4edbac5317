package server

import (
	"fmt"
	"slices"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
)

// Bookings lets clients book GPUs for a future slot, as a lab's GPU
// booking system does: an offer whose start_at is in the future is
// accepted when GPUs of its class are free for the whole slot
// [start_at, start_at + time limit] given the other bookings (see
// View.FreeDuring), and Base accepts it on those GPUs. The node then
// reserves them and starts the job at start_at.
//
// Until a booking's slot begins its GPUs serve preemptible work, which is
// preempted when the booking starts; guaranteed work gets them only if its
// time limit ends before the slot. Offers that start now are Base's to
// decide, on the GPUs so left.
//
// Without Bookings a server takes no bookings. Combine it with FairUse
// (FairUse{Base: Bookings{…}}) for bounds on the slot's length and a
// cooldown between a client's contracts, counted to the booking's start.
type Bookings struct {
	Base Policy
	// MaxAhead is how far ahead a booking may start; 0 leaves the bound
	// to the exchange.
	MaxAhead time.Duration
	// OnePerClient refuses a client's booking while it has another here
	// that has not started.
	OnePerClient bool
}

var _ Policy = Bookings{}

// String names the policy in the server's heartbeats.
func (b Bookings) String() string {
	if s, ok := b.Base.(fmt.Stringer); ok {
		return "bookings " + s.String()
	}
	return "bookings"
}

// Validate checks the bounds and the base policy.
func (b Bookings) Validate() error {
	const op = "server.Bookings.Validate"
	if b.Base == nil {
		return bourse.Errorf(bourse.EInvalid, op, "no base policy")
	}
	if b.MaxAhead < 0 {
		return bourse.Errorf(bourse.EInvalid, op, "negative MaxAhead")
	}
	if v, ok := b.Base.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			return fmt.Errorf("bookings base: %w", err)
		}
	}
	return nil
}

// Decide books a future-start offer as the type's comment says, and
// otherwise decides as Base on the GPUs the offer may use.
func (b Bookings) Decide(offer contract.Terms, st View) Decision {
	if !offer.StartAt.After(st.Now) {
		if offer.Preemptible {
			return b.Base.Decide(offer, st)
		}
		booked := st.booked(st.Now, st.Now.Add(offer.TimeLimit))
		if len(booked) == 0 {
			return b.Base.Decide(offer, st)
		}
		now := st
		now.Free = slices.DeleteFunc(slices.Clone(st.Free), func(g contract.GPU) bool { return booked[g.Index] })
		return b.Base.Decide(offer, now)
	}
	start := offer.StartAt.UTC().Format(time.RFC3339)
	if b.MaxAhead > 0 && offer.StartAt.After(st.Now.Add(b.MaxAhead)) {
		return Decision{Reason: fmt.Sprintf("start %s is more than %v ahead", start, b.MaxAhead)}
	}
	if b.OnePerClient && st.Client.Booked > 0 {
		return Decision{Reason: fmt.Sprintf("client %s has a booking here already; one at a time", offer.Client)}
	}
	// The base judges the offer on the server as it will be in the slot.
	slot := st
	slot.Free = st.FreeDuring(offer.StartAt, offer.StartAt.Add(offer.TimeLimit))
	slot.Running = nil
	d := b.Base.Decide(offer, slot)
	if d.Accept {
		return Decision{Accept: true, Book: true}
	}
	d.Preempt = nil
	if d.Reason != "" {
		d.Reason = "for the slot from " + start + ": " + d.Reason
	}
	return d
}
