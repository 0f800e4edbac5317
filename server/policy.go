package server

import (
	"strings"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// Policy decides on offers. Decide must be pure: everything it may depend
// on, the clock included, is in State, so that the simulator can run it
// deterministically. The agent checks the offer's form (contract.Validate)
// and honours its own counter-offers before it asks the policy.
type Policy interface {
	Decide(offer contract.Terms, st State) Decision
}

// State is what a policy sees of the server when an offer arrives.
type State struct {
	Now   time.Time
	Scale int32 // decimal places of the server's currency, for contract.MaxCharge

	GPUs []protocol.GPU // every GPU of the server
	// Free are the GPUs neither running a job nor held for an accepted
	// offer. It is a list rather than a count because class constraints
	// decide which of them an offer may use.
	Free []protocol.GPU

	// Running are the contracts running now, except those an accepted
	// offer is to preempt: their GPUs are spoken for, like a hold's.
	Running []Run
	Recent  []contract.Terms // the terms of the last contracts started, oldest first

	// Client is what the server knows of the offer's client.
	Client ClientUse
}

// ClientUse is a client's use of the server, for fair-use rules.
type ClientUse struct {
	// Running counts the client's contracts running, or held for an
	// accepted offer.
	Running int
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

// FreeFor counts the free GPUs that satisfy c.
func (st State) FreeFor(c contract.Class) int {
	n := 0
	for _, g := range st.Free {
		if Fits(c, g) {
			n++
		}
	}
	return n
}

// Busy counts the GPUs that are not free.
func (st State) Busy() int { return len(st.GPUs) - len(st.Free) }

// Fits reports whether g satisfies the class. Models compare without case,
// since "h100" and "H100" name the same card.
func Fits(c contract.Class, g protocol.GPU) bool {
	return (c.Model == "" || strings.EqualFold(c.Model, g.Model)) && g.MemoryMiB >= c.MinMemoryMiB
}

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
	// suspend (reason preempted) for this offer: the agent takes their
	// GPUs, and they stop before its job starts.
	Preempt []string
}
