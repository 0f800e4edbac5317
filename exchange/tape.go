package exchange

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/contract"
)

// The tape is the contracts settled lately that paid for use, as market
// data needs them, read from the store: the store is the one record every
// instance shares, so figures read from it count each contract once
// however many instances settled them, and survive restarts. The tape
// reads only what it has not read, a page at a time, but reads tapeOverlap
// back: a contract's settled_at is set before its transaction commits, so
// one may appear after a later one was read. Ids already on the tape are
// skipped.

// tapeOverlap is how far back each read of the tape reaches before the
// last: more than a settlement takes to commit.
const tapeOverlap = 5 * time.Second

// tapePage is how many contracts one read of the store takes.
const tapePage = 1000

// sale is a contract settled, as the tape keeps it: what it paid for what
// it used.
type sale struct {
	id       string
	at       time.Time // settled
	currency string
	model    string
	used     decimal.Decimal // GPU-seconds used, U
	charged  decimal.Decimal
}

// tape is the sales of the market window, oldest first.
type tape struct {
	mu    sync.Mutex
	sales []sale
	seen  map[string]bool
	read  time.Time // the end of the last read
	// cut is the time of the oldest sale kept when the tape last dropped
	// sales of the window to keep within its bound: it covers no earlier.
	cut time.Time
}

// saleOf is c as the tape keeps it, model naming its GPUs' model; ok is
// false for a contract that paid nothing for use (it used nothing, or was
// charged nothing): such a contract moved no money for use, and moves no
// price.
func saleOf(c contract.Contract, model string) (s sale, ok bool) {
	if c.Reading == nil || !c.Reading.U.IsPositive() || !c.Charge.IsPositive() {
		return sale{}, false
	}
	return sale{id: c.ID, at: c.SettledAt, currency: c.Terms.Currency, model: model, used: c.Reading.U, charged: c.Charge}, true
}

// refresh reads the contracts settled since the last read into the tape and
// drops those older than from, then keeps at most max of the latest. It
// reports the earliest time the tape covers: from, or later where max cut
// it short.
func (h *House) refresh(ctx context.Context, from, now time.Time, max int) (time.Time, error) {
	t := &h.tape
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.seen == nil {
		t.seen = map[string]bool{}
	}
	start := from
	if at := t.read.Add(-tapeOverlap); at.After(start) {
		start = at
	}
	for after := ""; ; {
		cs, err := h.store.Settled(ctx, start, now, after, tapePage)
		if err != nil {
			return from, err
		}
		for _, c := range cs {
			if t.seen[c.ID] {
				continue
			}
			if s, ok := saleOf(c, h.servers.model(c.Server, c.Terms)); ok {
				t.seen[c.ID] = true
				t.sales = append(t.sales, s)
			}
		}
		t.trim(from, max)
		if len(cs) < tapePage {
			break
		}
		after = cs[len(cs)-1].ID
	}
	t.read = now
	return later(from, t.cut), nil
}

// trim sorts the sales and drops those before from, then the oldest
// beyond max, noting in t.cut the oldest kept where max dropped some of
// the window. t.mu is held.
func (t *tape) trim(from time.Time, max int) {
	slices.SortStableFunc(t.sales, func(a, b sale) int { return cmp.Or(a.at.Compare(b.at), cmp.Compare(a.id, b.id)) })
	drop, cut := 0, false
	for drop < len(t.sales) && (t.sales[drop].at.Before(from) || len(t.sales)-drop > max) {
		cut = cut || !t.sales[drop].at.Before(from)
		delete(t.seen, t.sales[drop].id)
		drop++
	}
	t.sales = slices.Delete(t.sales, 0, drop)
	if cut && len(t.sales) > 0 {
		t.cut = t.sales[0].at
	}
}

// sales returns a copy of the tape's sales.
func (t *tape) copy() []sale {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.sales)
}
