package mem

import (
	"context"
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/currency"
)

// state is the Ledger seen by currency.Apply; its caller holds l.mu.
type state struct{ l *Ledger }

var _ currency.Books = state{}

func (s state) Now() time.Time { return s.l.now() }

func (s state) Currency(_ context.Context, c currency.Code) (currency.Currency, bool, error) {
	cur, ok := s.l.currencies[c]
	return cur, ok, nil
}

func (s state) Account(_ context.Context, id currency.AccountID) (currency.Account, bool, error) {
	a, ok := s.l.accounts[id]
	if !ok {
		return currency.Account{}, false, nil
	}
	return a.Account, true, nil
}

func (s state) Balance(_ context.Context, id currency.AccountID) (decimal.Decimal, error) {
	a, ok := s.l.accounts[id]
	if !ok {
		return decimal.Decimal{}, fmt.Errorf("mem: no account %s", id)
	}
	return a.balance, nil
}

// Hold finds a hold that Compact forgot as resolved, so that a reserve
// of its id is EConflict and a capture, void or expire EHoldResolved.
func (s state) Hold(_ context.Context, id currency.HoldID) (currency.Hold, bool, error) {
	h, ok := s.l.holds[id]
	if !ok && s.l.forgotten.Has(forgottenHold, string(id)) {
		return currency.Hold{ID: id, Status: "resolved and compacted"}, true, nil
	}
	return h, ok, nil
}

// Result finds a key that Compact forgot with currency.ForgottenFingerprint,
// so that Apply refuses it rather than applying it twice.
func (s state) Result(_ context.Context, key string) (currency.Result, string, bool, error) {
	r, ok := s.l.results[key]
	if !ok && s.l.forgotten.Has(forgottenKey, key) {
		return currency.Result{Key: key}, currency.ForgottenFingerprint, true, nil
	}
	return r.r, r.fingerprint, ok, nil
}

func (s state) PutCurrency(_ context.Context, c currency.Currency) error {
	s.l.currencies[c.Code] = c
	return nil
}

func (s state) PutAccount(_ context.Context, a currency.Account) error {
	if _, ok := s.l.accounts[a.ID]; ok {
		return fmt.Errorf("mem: account %s exists", a.ID)
	}
	s.l.accounts[a.ID] = &account{Account: a}
	return nil
}

// PutHold keeps the per-wallet held sums in step with hold status.
func (s state) PutHold(_ context.Context, h currency.Hold) error {
	old, had := s.l.holds[h.ID]
	wasOpen := had && old.Status == currency.HoldOpen
	isOpen := h.Status == currency.HoldOpen
	switch {
	case isOpen && !wasOpen:
		s.l.held[h.From] = s.l.held[h.From].Add(h.Amount)
	case wasOpen && !isOpen:
		s.l.held[h.From] = s.l.held[h.From].Sub(old.Amount)
	}
	s.l.holds[h.ID] = h
	if isOpen && (!wasOpen || !old.Deadline.Equal(h.Deadline)) {
		s.l.opened(h)
	}
	return nil
}

func (s state) Post(_ context.Context, m currency.Movement) error {
	from, to := s.l.accounts[m.From], s.l.accounts[m.To]
	if from == nil || to == nil {
		return fmt.Errorf("mem: movement %s between unknown accounts", m.ID)
	}
	if _, dup := s.l.moveIDs[m.ID]; dup {
		return fmt.Errorf("mem: movement %s posted twice", m.ID)
	}
	s.l.moveIDs[m.ID] = struct{}{}
	s.l.posted++
	mv := &movement{Movement: m, seq: s.l.posted, from: true, to: true}
	s.l.movements = append(s.l.movements, mv)
	from.balance = from.balance.Sub(m.Amount)
	from.entries = append(from.entries, entry{m: mv, balance: from.balance})
	to.balance = to.balance.Add(m.Amount)
	to.entries = append(to.entries, entry{m: mv, balance: to.balance})
	return nil
}

func (s state) PutResult(_ context.Context, r currency.Result, fingerprint string) error {
	s.l.results[r.Key] = stored{r: r, fingerprint: fingerprint, at: s.l.now()}
	return nil
}
