package protocol

import (
	"fmt"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
)

// Ask is a server's ask as its hello and heartbeats carry it: the
// market's noun, with its rules, is contract.Ask; the wire adds Check,
// that an ask says nothing its server's GPUs do not have.
type Ask contract.Ask

// The parts of an ask travel as contract defines them.
type (
	ClassAsk       = contract.ClassAsk
	PreemptibleRun = contract.PreemptibleRun
	FreeAt         = contract.FreeAt
)

// RatePlaces are the decimal places of a PreemptibleRun's rate
// (contract.RatePlaces).
const RatePlaces = contract.RatePlaces

// Limits of an ask.
const (
	MaxAskClasses = 64
	MaxFreeAt     = 8
)

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
		case len(c.PreemptibleRuns) > c.Preemptible:
			return bad(f(".preemptible_runs"), "%d runs on %d preemptible GPUs", len(c.PreemptibleRuns), c.Preemptible)
		}
		held := 0
		for j, r := range c.PreemptibleRuns {
			if r.GPUs < 1 || r.Rate.IsNegative() || (j > 0 && r.Rate.LessThan(c.PreemptibleRuns[j-1].Rate)) {
				return bad(f(fmt.Sprintf(".preemptible_runs[%d]", j)), "%d GPUs at %s: runs are of a GPU or more, cheapest first", r.GPUs, r.Rate)
			}
			held += r.GPUs
		}
		if len(c.PreemptibleRuns) > 0 && held != c.Preemptible {
			return bad(f(".preemptible_runs"), "runs hold %d GPUs of the %d preemptible", held, c.Preemptible)
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
