package protocol

import (
	"fmt"
	"slices"
	"time"
)

// Happening is one thing that happened to a contract, as its record
// tells it.
type Happening struct {
	At   time.Time `json:"at"`
	What string    `json:"what"`
}

// History is what happened to contract v, in order, as its record tells
// it: waiting in the book, accepted, started, its stop asked, its
// settlement delayed, settled or voided. The exchange keeps a contract's
// last reading, not every one: the readings between are not here (watch
// follows them live). Its words name no amount: money is the ledger's
// (the statement's lines of the contract's hold).
func History(v ContractView) []Happening {
	var hs []Happening
	add := func(at time.Time, format string, args ...any) {
		if !at.IsZero() {
			hs = append(hs, Happening{At: at, What: fmt.Sprintf(format, args...)})
		}
	}
	add(v.QueuedAt, "offered; waited in the book for GPUs")
	add(v.AcceptedAt, "accepted by %s; prepayment escrowed; start by %s", v.Server, v.StartDeadline.UTC().Format(time.RFC3339))
	add(v.StartedAt, "started on %s's GPUs %v (%s), metered by %s", v.Server, v.GPUs, orNone(v.Model), orNone(string(v.Meter)))
	if r := v.Reading; r != nil && !v.StartedAt.IsZero() {
		final := ""
		if r.Final {
			final = ", final"
		}
		add(r.At, "reading #%d%s: %s GPU-seconds used in %s", r.Seq, final, r.U.StringFixed(1), time.Duration(r.T).Round(time.Second))
	}
	if s := v.Stop; s != nil {
		add(s.At, "%s asked; its server's readings count until %s", s.Reason, s.By.UTC().Format(time.RFC3339))
	}
	add(v.SettlementDelayedSince, "settlement delayed: the exchange retries it")
	if v.State.Ended() {
		add(v.SettledAt, "%s (%s)", v.State, v.Reason)
	}
	slices.SortStableFunc(hs, func(a, b Happening) int { return a.At.Compare(b.At) })
	return hs
}

func orNone(s string) string {
	if s == "" {
		return "unsaid"
	}
	return s
}
