package server

import (
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
)

// Policy decides on offers. Decide must be pure: everything it may depend
// on, the clock included, is in View, so that the simulator can run it
// deterministically. The node checks the offer's form (contract.Validate)
// and honours its own counter-offers before it asks the policy.
type Policy interface {
	Decide(offer contract.Terms, st View) Decision
}

// View is what a policy sees of the server when an offer arrives.
type View struct {
	Now   time.Time
	Scale int32 // decimal places of the server's currency, for contract.MaxCharge

	GPUs []contract.GPU // every GPU of the server
	// Free are the GPUs neither running a job nor claimed for an
	// accepted offer. It is a list rather than a count because class constraints
	// decide which of them an offer may use.
	Free []contract.GPU

	// Running are the contracts running now, except those an accepted
	// offer is to preempt: their GPUs are spoken for, like a claim's.
	Running []Run
	Recent  []contract.Terms // the terms of the last contracts started, oldest first
	// Bookings are the contracts accepted here for a future slot and not
	// started yet, by ID. Their GPUs are in Free until the slot begins.
	Bookings []Booking

	// Client is what the server knows of the offer's client.
	Client ClientUse
}

// ClientUse is a client's use of the server, for fair-use rules.
type ClientUse struct {
	// Running counts the client's contracts running, or its accepted
	// offers' claims.
	Running int
	// Booked counts its bookings here that have not started.
	Booked int
	// LastStart is when its last contract started, LastEnd when its last
	// contract ended other than by preemption; zero where the server
	// remembers none.
	LastStart, LastEnd time.Time
}

// Run is a running contract as a policy sees it.
type Run struct {
	ID      string
	Terms   contract.Terms
	GPUs    []int // the indexes of its GPUs
	Started time.Time
}

// Booking is a contract booked for a future slot, as a policy sees it.
type Booking struct {
	ID    string // the contract, or the offer before the exchange starts it
	Terms contract.Terms
	GPUs  []int // the indexes of the GPUs reserved for it
}

// End is when the booking's slot ends: its start plus its time limit.
func (b Booking) End() time.Time { return b.Terms.StartAt.Add(b.Terms.TimeLimit) }

// booked reports the GPUs of bookings whose slots overlap [from, to).
func (st View) booked(from, to time.Time) map[int]bool {
	out := map[int]bool{}
	for _, b := range st.Bookings {
		if b.Terms.StartAt.Before(to) && b.End().After(from) {
			for _, i := range b.GPUs {
				out[i] = true
			}
		}
	}
	return out
}

// FreeDuring lists the GPUs a booking of [from, to) may have: those no
// other booking of an overlapping slot holds, and that are free now or
// will be by from — running a preemptible job, which gives way when the
// slot begins, or a guaranteed one whose time limit ends by then. GPUs
// claimed for an accepted offer do not count, since its time limit is unknown here.
func (st View) FreeDuring(from, to time.Time) []contract.GPU {
	booked := st.booked(from, to)
	avail := map[int]bool{}
	for _, g := range st.Free {
		avail[g.Index] = true
	}
	for _, r := range st.Running {
		if r.Terms.Preemptible || !r.Started.Add(r.Terms.TimeLimit).After(from) {
			for _, i := range r.GPUs {
				avail[i] = true
			}
		}
	}
	var out []contract.GPU
	for _, g := range st.GPUs {
		if avail[g.Index] && !booked[g.Index] {
			out = append(out, g)
		}
	}
	return out
}

// FreeFor counts the free GPUs that satisfy c.
func (st View) FreeFor(c contract.Class) int { return c.Count(st.Free) }

// Busy counts the GPUs that are not free.
func (st View) Busy() int { return len(st.GPUs) - len(st.Free) }

// Decision is a policy's answer: accept, or reject with the reason and the
// offers it would accept instead.
type Decision struct {
	Accept bool
	// Counters are offers the policy would accept if they were made now,
	// in the same state: at least the reserve prices, at most the free GPUs.
	Counters []contract.Terms
	// ValidUntil is when the counters lapse.
	ValidUntil time.Time
	// Reason says why an offer was rejected, for a person to read.
	Reason string
	// Code is set when a rejection has a cause the client should see as a
	// typed error; most rejections have none.
	Code bourse.Code
	// Preempt, with Accept, names the running preemptible contracts to
	// suspend (reason preempted) for this offer: the node takes their
	// GPUs, and they stop before its job starts.
	Preempt []string
	// Book, with Accept, takes an offer that starts in the future as a
	// booking: the node reserves GPUs free for its whole slot
	// (View.FreeDuring) and starts the job at its start_at. The node
	// refuses a future start accepted without Book: a policy that does not
	// know of bookings would start the job at once.
	Book bool
}
