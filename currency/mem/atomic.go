package mem

import (
	"context"

	"github.com/bourse/bourse/currency"
)

// ApplyAtomic applies ops in order as one transaction: if one fails for a
// business reason, every write of the others is undone and no failure is
// kept under any key, as when a SQL transaction rolls back. The results
// say which op failed (its Result.Err); the others' results then describe
// what would have been done. A store that changes a record and moves its
// money in one step uses it, so that a failure there leaves nothing
// behind, not even a failure that a retry under the same key would find.
func (l *Ledger) ApplyAtomic(ctx context.Context, ops ...currency.Op) ([]currency.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	j := &journal{state: state{l}}
	rs := make([]currency.Result, len(ops))
	for i, op := range ops {
		r, err := currency.Apply(ctx, j, op)
		if err != nil { // state never fails; an error here is a bug in the rules
			j.rollback()
			return nil, err
		}
		rs[i] = r
		if r.Err != nil {
			j.rollback()
			return rs, nil
		}
	}
	return rs, nil
}

// journal is a state that remembers how to undo each write.
type journal struct {
	state
	undo []func()
}

var _ currency.Books = (*journal)(nil)

func (j *journal) rollback() {
	for i := len(j.undo) - 1; i >= 0; i-- {
		j.undo[i]()
	}
	j.undo = nil
}

func (j *journal) PutCurrency(ctx context.Context, c currency.Currency) error {
	old, had := j.l.currencies[c.Code]
	j.undo = append(j.undo, func() {
		if had {
			j.l.currencies[c.Code] = old
		} else {
			delete(j.l.currencies, c.Code)
		}
	})
	return j.state.PutCurrency(ctx, c)
}

func (j *journal) PutAccount(ctx context.Context, a currency.Account) error {
	if err := j.state.PutAccount(ctx, a); err != nil {
		return err
	}
	j.undo = append(j.undo, func() { delete(j.l.accounts, a.ID) })
	return nil
}

func (j *journal) PutHold(ctx context.Context, h currency.Hold) error {
	old, had := j.l.holds[h.ID]
	held, hadHeld := j.l.held[h.From]
	j.undo = append(j.undo, func() {
		if had {
			j.l.holds[h.ID] = old
		} else {
			delete(j.l.holds, h.ID)
		}
		if hadHeld {
			j.l.held[h.From] = held
		} else {
			delete(j.l.held, h.From)
		}
	})
	return j.state.PutHold(ctx, h)
}

func (j *journal) Post(ctx context.Context, m currency.Movement) error {
	if err := j.state.Post(ctx, m); err != nil {
		return err
	}
	from, to := j.l.accounts[m.From], j.l.accounts[m.To]
	j.undo = append(j.undo, func() {
		delete(j.l.moveIDs, m.ID)
		j.l.posted--
		j.l.movements[len(j.l.movements)-1] = nil
		j.l.movements = j.l.movements[:len(j.l.movements)-1]
		from.balance = from.balance.Add(m.Amount)
		from.entries = from.entries[:len(from.entries)-1]
		to.balance = to.balance.Sub(m.Amount)
		to.entries = to.entries[:len(to.entries)-1]
	})
	return nil
}

func (j *journal) PutResult(ctx context.Context, r currency.Result, fingerprint string) error {
	old, had := j.l.results[r.Key]
	j.undo = append(j.undo, func() {
		if had {
			j.l.results[r.Key] = old
		} else {
			delete(j.l.results, r.Key)
		}
	})
	return j.state.PutResult(ctx, r, fingerprint)
}
