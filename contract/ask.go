package contract

import (
	"time"

	"github.com/shopspring/decimal"
)

// Ask is what a server would take now and soon, as its hello and every
// heartbeat say it: per class of its GPUs, the least its policy takes
// (as offer curves: an offer whose curves cover them everywhere its job
// can run, for no longer than MaxTimeLimit, is one the policy accepts
// while the GPUs are there), how many of them are free and when busy ones
// free up. The exchange routes offers by asks, answers quotes and
// builds counter-offers from them, and publishes their prices as the
// market's ask side; protocol.Ask carries it on the wire and checks it
// against the server's GPUs.
//
// An ask binds no one: the server's accept does. One that is stale by the
// time an offer arrives costs that offer a refusal, never money.
type Ask struct {
	Classes []ClassAsk `json:"classes"`
	// MaxTimeLimit is the longest time limit the server takes; zero for
	// no limit of its own.
	MaxTimeLimit Duration `json:"max_time_limit,omitempty"`
	// Preempts says that a guaranteed offer that pays more than running
	// preemptible contracts may take their GPUs (ClassAsk.Preemptible).
	Preempts bool `json:"preempts,omitempty"`
	// Books says that the server takes offers with a future start_at.
	Books bool `json:"books,omitempty"`
}

// ClassAsk is a server's ask for one class of its GPUs: those of one
// model and memory.
type ClassAsk struct {
	Model     string `json:"model"`
	MemoryMiB int    `json:"memory_mib"`
	GPUs      int    `json:"gpus"`
	// Free are the GPUs of the class neither running a job nor claimed
	// for an accept the exchange has not yet started or cancelled.
	Free int `json:"free"`
	// Preemptible are the GPUs of the class running preemptible
	// contracts: room for a guaranteed offer, where the server preempts.
	Preemptible int `json:"preemptible,omitempty"`
	// PreemptibleRuns are those GPUs by the contracts that hold them,
	// cheapest first: a server preempts only a contract paying less per
	// GPU-second at full use than the offer (server.Preempting), so an
	// offer has room only in the runs it outbids. Empty with Preemptible
	// set: a server of old, whose runs all count.
	PreemptibleRuns []PreemptibleRun `json:"preemptible_runs,omitempty"`
	// FreeAt says when busy GPUs free up at the latest (their contracts'
	// time limits), soonest first, at most protocol.MaxFreeAt times.
	FreeAt []FreeAt `json:"free_at,omitempty"`
	// P and Q are the least the server takes for a GPU of the class now:
	// the curves its policy would counter an offer below them with. P
	// empty says the server does not say (its policy does not), and it
	// is asked like a server of old.
	P Curve `json:"p,omitempty"`
	Q Curve `json:"q,omitempty"`
}

// PreemptibleRun is the GPUs of a class one running preemptible contract
// holds, and its full-use rate per GPU-second (Terms.FullUsePrice),
// rounded up: an offer whose own full-use rate exceeds it outbids the
// contract.
type PreemptibleRun struct {
	GPUs int             `json:"gpus"`
	Rate decimal.Decimal `json:"rate"`
}

// RatePlaces are the decimal places of a PreemptibleRun's rate: rounded
// up there, an offer the rate says outbids the contract does.
const RatePlaces = 12

// FreeAt is a count of GPUs that free up by a time.
type FreeAt struct {
	At   time.Time `json:"at"`
	GPUs int       `json:"gpus"`
}

// Priced says whether the ask says what the class costs.
func (c ClassAsk) Priced() bool { return len(c.P) > 0 }

// Price is what the class asks per GPU-second at full use of one GPU:
// the order in which the exchange considers asks, cheapest first.
func (c ClassAsk) Price() Price {
	return Terms{GPUs: 1, P: c.P, Q: c.Q}.FullUsePrice()
}

// Fits says whether the class's GPUs are of class cl (Class.Fits).
func (c ClassAsk) Fits(cl Class) bool { return cl.Fits(c.Model, c.MemoryMiB) }

// Enough says whether the class has GPUs enough of t's class for t, room
// or not.
func (c ClassAsk) Enough(t Terms) bool { return c.Fits(t.Class) && c.GPUs >= t.GPUs }

// Serves says whether class c of the ask takes an offer of terms t: it
// has GPUs enough for t (Enough), t meets its ask, and it has room for t
// now, or, for a booking (t starts later), the server books or the class
// names no price (a server of old is asked as it always was). The
// exchange routes an offer and matches a waiting one by this one rule.
func (a *Ask) Serves(c ClassAsk, t Terms, booking bool) bool {
	if !c.Enough(t) || !a.Meets(c, t) {
		return false
	}
	if booking {
		return a.Books || !c.Priced()
	}
	return a.Room(c, t) >= t.GPUs
}

// MostRoom is the most room class c may have for any offer: its free
// GPUs, and those running preemptible work where the server preempts.
func (a *Ask) MostRoom(c ClassAsk) int {
	if a.Preempts {
		return c.Free + c.Preemptible
	}
	return c.Free
}

// Room is how many GPUs of the class an offer of terms t could have here
// now: the free ones, and for a guaranteed offer to a server that
// preempts, those running preemptible contracts it outbids too.
func (a *Ask) Room(c ClassAsk, t Terms) int {
	if !a.Preempts || t.Preemptible || c.Preemptible == 0 {
		return c.Free
	}
	if len(c.PreemptibleRuns) == 0 {
		return c.Free + c.Preemptible
	}
	rate, n := t.FullUsePrice(), c.Free
	for _, r := range c.PreemptibleRuns {
		if !rate.Exceeds(r.Rate) {
			break // cheapest first: it outbids none after
		}
		n += r.GPUs
	}
	return n
}

// Meets says whether terms t meet the ask of class c: its curves cover
// the ask's wherever a job of t's GPUs can run, and its time limit is
// within the ask's. An unpriced class is met by any terms.
func (a *Ask) Meets(c ClassAsk, t Terms) bool {
	if a.MaxTimeLimit > 0 && t.TimeLimit > time.Duration(a.MaxTimeLimit) {
		return false
	}
	if !c.Priced() {
		return true
	}
	g := decimal.NewFromInt(int64(t.GPUs))
	return t.P.Covers(c.P, g) && t.Q.Covers(c.Q, g)
}

// Reserve is the ask of class c as a reserve, to build counter-offers
// from (Reserve.Counter).
func (a *Ask) Reserve(c ClassAsk) Reserve {
	return Reserve{P: c.P, Q: c.Q, MaxTimeLimit: time.Duration(a.MaxTimeLimit)}
}

// CounterFor is what the ask of class c counters terms t with, as its
// server's policy would: t cut to the GPUs it has room for and to its time
// limit, its curves raised to the ask's where they fall short
// (Reserve.Counter); zero where t meets the ask with room, and why lists
// what t falls short in.
func (a *Ask) CounterFor(c ClassAsk, t Terms, scale int32) (counter Terms, why []string) {
	room := min(a.Room(c, t), c.GPUs)
	return a.Reserve(c).Counter(t, room, scale)
}
