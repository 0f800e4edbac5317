package mem

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/currency"
)

// Audit rebuilds every balance from its carried-forward figure and the
// movements still kept, and checks the invariants of currency/audit.go.
// What Compact forgot is checked through what it left: each side of a
// kept movement is on its account's statement or was carried forward
// (its number is at most the account's last carried one); each balance is
// its carried-forward figure plus its entries; every currency sums to
// zero; the held sums equal the open holds; and the compacted holds'
// captures and releases add up to what they held.
func (l *Ledger) Audit(_ context.Context) (currency.Report, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := currency.Report{Currencies: len(l.currencies), Accounts: len(l.accounts), Movements: len(l.movements), Holds: len(l.holds)}
	add := func(v currency.Violation) { r.Violations = append(r.Violations, v) }
	// Money in a violation's words is at its currency's places, as a
	// person reads it everywhere else; exact where finer, which a broken
	// ledger may well be.
	money := func(code currency.Code, d decimal.Decimal) string {
		c, ok := l.currencies[code]
		if !ok {
			return d.String()
		}
		return currency.Format(d, c.Scale)
	}

	// The entries of each movement on each side, as the statements hold them.
	type sides struct{ from, to int }
	onBooks := map[*movement]*sides{}
	for id, a := range l.accounts {
		for _, e := range a.entries {
			s := onBooks[e.m]
			if s == nil {
				s = &sides{}
				onBooks[e.m] = s
			}
			switch id {
			case e.m.From:
				s.from++
			case e.m.To:
				s.to++
			default:
				add(currency.Violation{Rule: currency.RuleDoubleEntry, Currency: a.Currency, Account: id, Detail: "an entry of movement " + e.m.ID + ", which does not touch this account"})
			}
		}
	}

	rebuilt := map[currency.AccountID]decimal.Decimal{}
	seen := map[string]bool{}
	for _, m := range l.movements {
		if seen[m.ID] {
			add(currency.Violation{Rule: currency.RuleAppliedOnce, Currency: m.Currency, Detail: "movement " + m.ID + " posted twice"})
		}
		seen[m.ID] = true
		s := onBooks[m]
		if s == nil {
			s = &sides{}
		}
		delete(onBooks, m)
		for _, side := range []struct {
			id    currency.AccountID
			kept  bool
			n     int
			delta decimal.Decimal
		}{{m.From, m.from, s.from, m.Amount.Neg()}, {m.To, m.to, s.to, m.Amount}} {
			a := l.accounts[side.id]
			var bad string
			switch {
			case a == nil && (side.kept || !l.compactedEscrow(side.id)):
				bad = "joins " + string(side.id) + ", which does not exist"
			case a == nil:
			case a.Currency != m.Currency:
				bad = "joins " + string(side.id) + " of another currency"
			case side.kept && side.n != 1:
				bad = fmt.Sprintf("has %d entries on %s", side.n, side.id)
			case !side.kept && (side.n != 0 || m.seq > a.upTo):
				bad = fmt.Sprintf("has %d entries on %s, which carried forward up to movement %d, not %d", side.n, side.id, a.upTo, m.seq)
			}
			if bad != "" {
				add(currency.Violation{Rule: currency.RuleDoubleEntry, Currency: m.Currency, Account: side.id, Detail: "movement " + m.ID + " " + bad})
			}
			if a != nil && side.kept {
				rebuilt[side.id] = rebuilt[side.id].Add(side.delta)
			}
		}
	}
	for m := range onBooks {
		add(currency.Violation{Rule: currency.RuleDoubleEntry, Currency: m.Currency, Detail: "movement " + m.ID + " is on a statement but not in the ledger"})
	}

	sums := map[currency.Code]decimal.Decimal{}
	for id, a := range l.accounts {
		sums[a.Currency] = sums[a.Currency].Add(a.balance)
		if a.balance.IsNegative() && a.Kind != currency.Issuance {
			add(currency.Violation{Rule: currency.RuleNonNegative, Currency: a.Currency, Account: id, Detail: "balance " + money(a.Currency, a.balance)})
		}
		if a.base == 0 && !a.carried.IsZero() {
			add(currency.Violation{Rule: currency.RuleEntries, Currency: a.Currency, Account: id, Detail: "carries " + money(a.Currency, a.carried) + " forward from no entries"})
		}
		running := a.carried
		for i, e := range a.entries {
			if e.m.To == id {
				running = running.Add(e.m.Amount)
			} else {
				running = running.Sub(e.m.Amount)
			}
			if !running.Equal(e.balance) {
				add(currency.Violation{Rule: currency.RuleEntries, Currency: a.Currency, Account: id,
					Detail: fmt.Sprintf("entry %d says balance %s, entries add up to %s", a.base+int64(i+1), money(a.Currency, e.balance), money(a.Currency, running))})
				running = e.balance
			}
			if i == 0 && e.m.seq <= a.upTo {
				add(currency.Violation{Rule: currency.RuleEntries, Currency: a.Currency, Account: id,
					Detail: fmt.Sprintf("entry %d is movement %d, carried forward already", a.base+1, e.m.seq)})
			}
		}
		if want := a.carried.Add(rebuilt[id]); !a.balance.Equal(want) || !a.balance.Equal(running) {
			add(currency.Violation{Rule: currency.RuleEntries, Currency: a.Currency, Account: id,
				Detail: fmt.Sprintf("balance %s, carried forward %s and movements sum to %s, entries to %s",
					money(a.Currency, a.balance), money(a.Currency, a.carried), money(a.Currency, want), money(a.Currency, running))})
		}
	}
	for code := range l.currencies {
		if s := sums[code]; !s.IsZero() {
			add(currency.Violation{Rule: currency.RuleZeroSum, Currency: code, Detail: "balances sum to " + money(code, s)})
		}
	}

	open := map[currency.AccountID]decimal.Decimal{}
	for id, h := range l.holds {
		escrow := decimal.Zero
		if a := l.accounts[h.Escrow()]; a != nil {
			escrow = a.balance
		}
		if h.Status == currency.HoldOpen {
			r.OpenHolds++
			open[h.From] = open[h.From].Add(h.Amount)
			if !escrow.Equal(h.Amount) {
				add(currency.Violation{Rule: currency.RuleHoldBalanced, Currency: h.Currency, Hold: id, Detail: fmt.Sprintf("open hold of %s has %s in escrow", money(h.Currency, h.Amount), money(h.Currency, escrow))})
			}
			continue
		}
		if !escrow.IsZero() || !h.Captured.Add(h.Released).Equal(h.Amount) {
			add(currency.Violation{Rule: currency.RuleHoldBalanced, Currency: h.Currency, Hold: id,
				Detail: fmt.Sprintf("%s hold of %s: captured %s + released %s, %s left in escrow", h.Status,
					money(h.Currency, h.Amount), money(h.Currency, h.Captured), money(h.Currency, h.Released), money(h.Currency, escrow))})
		}
	}
	for id := range l.held {
		open[id] = open[id].Add(decimal.Zero)
	}
	for id, want := range open {
		if got := l.held[id]; !got.Equal(want) {
			code, _ := id.Currency()
			add(currency.Violation{Rule: currency.RuleHoldBalanced, Account: id, Detail: fmt.Sprintf("held %s, open holds sum to %s", money(code, got), money(code, want))})
		}
	}
	for code, t := range l.compacted {
		if !t.captured.Add(t.released).Equal(t.amount) {
			add(currency.Violation{Rule: currency.RuleHoldBalanced, Currency: code,
				Detail: fmt.Sprintf("%d compacted holds of %s: captured %s + released %s", t.n, money(code, t.amount), money(code, t.captured), money(code, t.released))})
		}
	}
	l.auditConversions(add)
	return r, nil
}

// auditConversions checks that each conversion has both legs. Compact may
// forget one leg before the other (they are on different accounts), so
// only exchanges whose key's result is still kept are checked: those were
// stored after every compaction's cut, like their legs.
func (l *Ledger) auditConversions(add func(currency.Violation)) {
	legs := map[string][]*movement{}
	for _, m := range l.movements {
		if strings.HasPrefix(m.ID, "x/") {
			legs[m.Key] = append(legs[m.Key], m)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(legs)) {
		if _, kept := l.results[key]; kept && len(legs[key]) != 2 {
			m := legs[key][0]
			add(currency.Violation{Rule: currency.RuleConversionWhole, Currency: m.Currency, Detail: fmt.Sprintf("exchange %q has %d legs", key, len(legs[key]))})
		}
	}
}

// compactedEscrow reports whether id may be the escrow account of a hold
// that Compact forgot (escrow accounts go with their holds).
func (l *Ledger) compactedEscrow(id currency.AccountID) bool {
	h, ok := strings.CutPrefix(string(id), "escrow/")
	if !ok {
		return false
	}
	_, kept := l.holds[currency.HoldID(h)]
	return !kept
}
