package mem

import (
	"context"
	"fmt"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/currency"
)

// Audit rebuilds every balance from the movements and checks the invariants
// of currency/audit.go.
func (l *Ledger) Audit(_ context.Context) (currency.Report, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := currency.Report{Currencies: len(l.currencies), Accounts: len(l.accounts), Movements: len(l.movements), Holds: len(l.holds)}
	add := func(v currency.Violation) { r.Violations = append(r.Violations, v) }

	sums := map[currency.Code]decimal.Decimal{}
	rebuilt := map[currency.AccountID]decimal.Decimal{}
	seen := map[string]bool{}
	for _, m := range l.movements {
		if seen[m.ID] {
			add(currency.Violation{Rule: currency.RuleAppliedOnce, Currency: m.Currency, Detail: "movement " + m.ID + " posted twice"})
		}
		seen[m.ID] = true
		from, to := l.accounts[m.From], l.accounts[m.To]
		if from == nil || to == nil || from.Currency != m.Currency || to.Currency != m.Currency {
			add(currency.Violation{Rule: currency.RuleDoubleEntry, Currency: m.Currency, Detail: "movement " + m.ID + " joins accounts of another currency or none"})
		}
		rebuilt[m.From] = rebuilt[m.From].Sub(m.Amount)
		rebuilt[m.To] = rebuilt[m.To].Add(m.Amount)
	}
	for id, a := range l.accounts {
		sums[a.Currency] = sums[a.Currency].Add(a.balance)
		if a.balance.IsNegative() && a.Kind != currency.Issuance {
			add(currency.Violation{Rule: currency.RuleNonNegative, Currency: a.Currency, Account: id, Detail: "balance " + a.balance.String()})
		}
		running := decimal.Zero
		for i, e := range a.entries {
			m := l.movements[e.mov]
			if m.To == id {
				running = running.Add(m.Amount)
			} else {
				running = running.Sub(m.Amount)
			}
			if !running.Equal(e.balance) {
				add(currency.Violation{Rule: currency.RuleEntries, Currency: a.Currency, Account: id,
					Detail: fmt.Sprintf("entry %d says balance %s, entries add up to %s", i+1, e.balance, running)})
				running = e.balance
			}
		}
		if !a.balance.Equal(rebuilt[id]) || !a.balance.Equal(running) {
			add(currency.Violation{Rule: currency.RuleEntries, Currency: a.Currency, Account: id,
				Detail: fmt.Sprintf("balance %s, movements sum to %s, entries to %s", a.balance, rebuilt[id], running)})
		}
	}
	for code := range l.currencies {
		if s := sums[code]; !s.IsZero() {
			add(currency.Violation{Rule: currency.RuleZeroSum, Currency: code, Detail: "balances sum to " + s.String()})
		}
	}
	for id, h := range l.holds {
		escrow := decimal.Zero
		if a := l.accounts[h.Escrow()]; a != nil {
			escrow = a.balance
		}
		if h.Status == currency.HoldOpen {
			r.OpenHolds++
			if !escrow.Equal(h.Amount) {
				add(currency.Violation{Rule: currency.RuleHoldBalanced, Currency: h.Currency, Hold: id, Detail: fmt.Sprintf("open hold of %s has %s in escrow", h.Amount, escrow)})
			}
			continue
		}
		if !escrow.IsZero() || !h.Captured.Add(h.Released).Equal(h.Amount) {
			add(currency.Violation{Rule: currency.RuleHoldBalanced, Currency: h.Currency, Hold: id,
				Detail: fmt.Sprintf("%s hold of %s: captured %s + released %s, %s left in escrow", h.Status, h.Amount, h.Captured, h.Released, escrow)})
		}
	}
	return r, nil
}
