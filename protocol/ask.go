package protocol

import (
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
)

// Ask is what a server would take now and soon, as its hello and every
// heartbeat say it: per class of its GPUs, the least its policy takes
// (as offer curves: an offer whose curves cover them everywhere its job
// can run, for no longer than MaxTimeLimit, is one the policy accepts
// while the GPUs are there), how many of them are free and when busy ones
// free up. The exchange routes offers by asks, answers quotes and
// builds counter-offers from them, and publishes their prices as the
// market's ask side.
//
// An ask binds no one: the server's accept does. One that is stale by the
// time an offer arrives costs that offer a refusal, never money.
type Ask struct {
	Classes []ClassAsk `json:"classes"`
	// MaxTimeLimit is the longest time limit the server takes; zero for
	// no limit of its own.
	MaxTimeLimit contract.Duration `json:"max_time_limit,omitempty"`
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
	// FreeAt says when busy GPUs free up at the latest (their contracts'
	// time limits), soonest first, at most MaxFreeAt times.
	FreeAt []FreeAt `json:"free_at,omitempty"`
	// P and Q are the least the server takes for a GPU of the class now:
	// the curves its policy would counter an offer below them with. P
	// empty says the server does not say (its policy does not), and it
	// is asked like a server of old.
	P contract.Curve `json:"p,omitempty"`
	Q contract.Curve `json:"q,omitempty"`
}

// FreeAt is a count of GPUs that free up by a time.
type FreeAt struct {
	At   time.Time `json:"at"`
	GPUs int       `json:"gpus"`
}

// Limits of an ask.
const (
	MaxAskClasses = 64
	MaxFreeAt     = 8
)

// Priced says whether the ask says what the class costs.
func (c ClassAsk) Priced() bool { return len(c.P) > 0 }

// Check checks an ask against the GPUs of the hello that carries it:
// classes that exist there, counts within them, valid curves.
func (a *Ask) Check(gpus []contract.GPU) error {
	bad := func(field, format string, args ...any) error {
		return &bourse.Error{Code: bourse.EInvalid, Op: "protocol.Ask", Field: "ask." + field, Message: fmt.Sprintf(format, args...)}
	}
	if len(a.Classes) > MaxAskClasses {
		return bad("classes", "%d classes; at most %d", len(a.Classes), MaxAskClasses)
	}
	if a.MaxTimeLimit < 0 {
		return bad("max_time_limit", "negative")
	}
	type class struct {
		model string
		mem   int
	}
	have := map[class]int{}
	for _, g := range gpus {
		have[class{g.Model, g.MemoryMiB}]++
	}
	seen := map[class]bool{}
	for i, c := range a.Classes {
		// The field's name is made only for an error: every heartbeat's
		// ask comes through here.
		f := func(sub string) string { return fmt.Sprintf("classes[%d]%s", i, sub) }
		k := class{c.Model, c.MemoryMiB}
		switch {
		case seen[k]:
			return bad(f(""), "class %s/%d MiB twice", c.Model, c.MemoryMiB)
		case c.GPUs < 1 || c.GPUs != have[k]:
			return bad(f(".gpus"), "%d GPUs of %s/%d MiB; the server has %d", c.GPUs, c.Model, c.MemoryMiB, have[k])
		case c.Free < 0 || c.Preemptible < 0 || c.Free+c.Preemptible > c.GPUs:
			return bad(f(".free"), "%d free and %d preemptible of %d GPUs", c.Free, c.Preemptible, c.GPUs)
		case len(c.FreeAt) > MaxFreeAt:
			return bad(f(".free_at"), "%d times; at most %d", len(c.FreeAt), MaxFreeAt)
		}
		seen[k] = true
		for j, fa := range c.FreeAt {
			if fa.GPUs < 1 || fa.GPUs > c.GPUs {
				return bad(f(fmt.Sprintf(".free_at[%d].gpus", j)), "%d of %d GPUs", fa.GPUs, c.GPUs)
			}
		}
		if err := c.P.Validate(); err != nil {
			return bad(f(".p"), "%v", err)
		}
		if err := c.Q.Validate(); err != nil {
			return bad(f(".q"), "%v", err)
		}
	}
	return nil
}

// Room is how many GPUs of the class an offer of terms t could have here
// now: the free ones, and for a guaranteed offer to a server that
// preempts, those running preemptible contracts too.
func (a *Ask) Room(c ClassAsk, t contract.Terms) int {
	if a.Preempts && !t.Preemptible {
		return c.Free + c.Preemptible
	}
	return c.Free
}

// Meets says whether terms t meet the ask of class c: its curves cover
// the ask's wherever a job of t's GPUs can run, and its time limit is
// within the ask's. An unpriced class is met by any terms.
func (a *Ask) Meets(c ClassAsk, t contract.Terms) bool {
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
// from (contract.Reserve.Counter).
func (a *Ask) Reserve(c ClassAsk) contract.Reserve {
	return contract.Reserve{P: c.P, Q: c.Q, MaxTimeLimit: time.Duration(a.MaxTimeLimit)}
}

// Price is what the class asks per GPU-second at full use of one GPU:
// the order in which the exchange considers asks, cheapest first.
func (c ClassAsk) Price() contract.Price {
	return contract.Terms{GPUs: 1, P: c.P, Q: c.Q}.FullUsePrice()
}
