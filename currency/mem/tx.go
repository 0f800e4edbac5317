package mem

import (
	"context"
	"fmt"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/currency"
)

// Tx runs fn as one transaction under the ledger's lock, as
// sqlledger.Ledger.Tx does on a database: what fn reads through t cannot
// change before it returns, so an amount decided on a balance read there
// is moved on that balance, and the operations it applies through t are
// all undone if fn returns an error (no failure is kept under any key
// then). fn must not call the ledger's other methods: they wait for the
// lock it holds.
func (l *Ledger) Tx(ctx context.Context, fn func(ctx context.Context, t *Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	t := &Tx{j: &journal{state: state{l}}}
	if err := fn(ctx, t); err != nil {
		t.j.rollback()
		return err
	}
	return nil
}

// Tx is the transaction of one Ledger.Tx call.
type Tx struct{ j *journal }

var _ currency.TxReader = (*Tx)(nil)

// Balance is id's own balance (its money not held), as the transaction
// sees it; found is false where there is no such account.
func (t *Tx) Balance(_ context.Context, id currency.AccountID) (decimal.Decimal, bool, error) {
	a, ok := t.j.l.accounts[id]
	if !ok {
		return decimal.Decimal{}, false, nil
	}
	return a.balance, true, nil
}

// Held is the sum of id's open holds.
func (t *Tx) Held(_ context.Context, id currency.AccountID) (decimal.Decimal, error) {
	return t.j.l.held[id], nil
}

// Net is what account has received from counterparty less what it sent
// it, over the entries still on account's statement (Compact folds older
// ones into a figure that names no counterparty).
func (t *Tx) Net(_ context.Context, account, counterparty currency.AccountID) (decimal.Decimal, error) {
	a, ok := t.j.l.accounts[account]
	if !ok {
		return decimal.Zero, nil
	}
	if a.base > 0 {
		return decimal.Zero, fmt.Errorf("mem: the first %d entries of %s are compacted: their counterparties are forgotten", a.base, account)
	}
	net := decimal.Zero
	for _, e := range a.entries {
		switch {
		case e.m.To == account && e.m.From == counterparty:
			net = net.Add(e.m.Amount)
		case e.m.From == account && e.m.To == counterparty:
			net = net.Sub(e.m.Amount)
		}
	}
	return net, nil
}

// Apply applies ops in order in the transaction. An op that fails for a
// business reason carries Result.Err and the others are applied, as
// Ledger.Apply does; to undo them all, fn returns an error.
func (t *Tx) Apply(ctx context.Context, ops ...currency.Op) ([]currency.Result, error) {
	rs := make([]currency.Result, len(ops))
	for i, op := range ops {
		r, err := currency.Apply(ctx, t.j, op)
		if err != nil { // state never fails; an error here is a bug in the rules
			return nil, err
		}
		rs[i] = r
	}
	return rs, nil
}

// Used reports whether an operation has been applied, or has failed,
// under key (a key Compact forgot included).
func (t *Tx) Used(ctx context.Context, key string) (bool, error) {
	_, _, found, err := t.j.Result(ctx, key)
	return found, err
}
