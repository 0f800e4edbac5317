package mem

import (
	"container/heap"
	"slices"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/currency"
)

// CompactStats is what one Compact forgot, and what the ledger keeps.
type CompactStats struct {
	Entries      int // statement entries folded into carried-forward figures
	Movements    int // movements forgotten on both sides
	Holds        int // resolved holds forgotten, with their escrow accounts
	Results      int // idempotency results forgotten, their keys kept as fingerprints
	Fingerprints int // forgotten keys and hold ids still recognised
	// Kept: movements still on a statement, holds, results.
	KeptMovements, KeptHolds, KeptResults int
}

// holdTotals sums the holds Compact forgot, for the audit.
type holdTotals struct {
	n                          int
	amount, captured, released decimal.Decimal
}

// Compact forgets what finished before `before`, so that a ledger that
// runs for ever (the simulator's) keeps memory in proportion to what is
// live rather than to all it ever did. Balances, held sums, open holds and
// everything at or after `before` are untouched.
//
// It forgets:
//   - each account's oldest entries, up to the first one that is not
//     finished, folded into a carried-forward figure (the balance before
//     the first kept entry) that a statement shows as its first line
//     (currency.CarriedForward). An entry is finished when its movement
//     was posted before `before` and, if it moved a hold's money, the hold
//     was resolved before `before`; so an open hold keeps its wallet's
//     later entries until it resolves. A movement goes once neither side
//     keeps it.
//   - holds resolved before `before`, with their (empty) escrow accounts.
//     Hold then says ENotFound wrapping currency.ErrForgotten; a Reserve
//     of the same id is EConflict, a Capture, Void or Expire
//     EHoldResolved.
//   - idempotency results stored before `before`, except a Reserve's
//     while its hold is open. The key is kept as an 8-byte fingerprint:
//     applying any operation under it again is EIdempotencyConflict
//     wrapping currency.ErrForgotten, never a second application (the
//     first answer itself is gone).
//
// Fingerprints stay for Options.Remember after the compaction that made
// them (for ever if zero); after that a forgotten key or hold id is taken
// for new. Audit still checks every invariant; see Audit for how.
func (l *Ledger) Compact(before time.Time) CompactStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	var st CompactStats
	l.forgotten.Begin(before)
	finished := func(m *movement) bool {
		if !m.At.Before(before) {
			return false
		}
		if m.Hold == "" {
			return true
		}
		h, ok := l.holds[m.Hold]
		return !ok || (h.Status != currency.HoldOpen && h.Resolved.Before(before))
	}
	for id, a := range l.accounts {
		n := 0
		for n < len(a.entries) && finished(a.entries[n].m) {
			if m := a.entries[n].m; m.From == id {
				m.from = false
			} else {
				m.to = false
			}
			n++
		}
		if n == 0 {
			continue
		}
		last := a.entries[n-1]
		a.carried, a.base, a.upTo, a.carriedAt = last.balance, a.base+int64(n), last.m.seq, last.m.At
		if n == len(a.entries) {
			a.entries = nil
		} else {
			a.entries = slices.Clone(a.entries[n:]) // let the old array go
		}
		st.Entries += n
	}

	for id, h := range l.holds {
		if h.Status == currency.HoldOpen || !h.Resolved.Before(before) {
			continue
		}
		if e := l.accounts[h.Escrow()]; e != nil && (len(e.entries) > 0 || !e.balance.IsZero()) {
			continue // not finished after all; Audit will say why
		}
		delete(l.accounts, h.Escrow())
		delete(l.holds, id)
		l.forgotten.Add(forgottenHold, string(id))
		t := l.compacted[h.Currency]
		if t == nil {
			t = &holdTotals{}
			l.compacted[h.Currency] = t
		}
		t.n++
		t.amount, t.captured, t.released = t.amount.Add(h.Amount), t.captured.Add(h.Captured), t.released.Add(h.Released)
		st.Holds++
	}

	kept := make([]*movement, 0, len(l.movements)/2)
	for _, m := range l.movements {
		if m.from || m.to {
			kept = append(kept, m)
			continue
		}
		delete(l.moveIDs, m.ID)
		st.Movements++
	}
	l.movements = kept

	for key, r := range l.results {
		if !r.at.Before(before) {
			continue
		}
		if h := r.r.Hold; h != nil {
			if cur, ok := l.holds[h.ID]; ok && cur.Status == currency.HoldOpen {
				continue
			}
		}
		delete(l.results, key)
		l.forgotten.Add(forgottenKey, key)
		st.Results++
	}

	// The due index drops closed holds lazily, when the sweep reaches
	// them; keep only the open ones, so that it cannot grow without one.
	due := dueIndex{}
	for _, e := range l.due {
		if h, ok := l.holds[e.id]; ok && h.Status == currency.HoldOpen && h.Deadline.Equal(e.deadline) {
			due = append(due, e)
		}
	}
	heap.Init(&due)
	l.due = due

	// A map never shrinks: copy those that lost most of their rows.
	if st.Holds > len(l.holds) {
		l.holds, l.accounts = shrink(l.holds), shrink(l.accounts)
	}
	if st.Movements > len(l.moveIDs) {
		l.moveIDs = shrink(l.moveIDs)
	}
	if st.Results > len(l.results) {
		l.results = shrink(l.results)
	}

	st.Fingerprints = l.forgotten.Len()
	st.KeptMovements, st.KeptHolds, st.KeptResults = len(l.movements), len(l.holds), len(l.results)
	return st
}

// shrink copies m into a map of its size (maps.Clone keeps the capacity).
func shrink[K comparable, V any](m map[K]V) map[K]V {
	out := make(map[K]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
