package sqlledger

import (
	"context"

	"github.com/bourse/bourse/currency"
)

// Apply applies ops in order in one transaction (with group commit, one
// shared with other callers' ops): one round trip reads and locks every row
// they need, currency.Apply decides each in memory, and a second round trip
// writes the outcome and commits. If the transaction fails to serialize it
// runs again from the start. An error means that nothing was applied or,
// if the connection broke during COMMIT or ctx ended while a group
// committed, that we cannot tell: retry with the same keys either way.
func (l *Ledger) Apply(ctx context.Context, ops ...currency.Op) ([]currency.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(ops) == 0 {
		return []currency.Result{}, nil
	}
	if l.group != nil {
		return l.group.apply(ctx, ops)
	}
	var rs []currency.Result
	err := l.run(ctx, "apply", func(ctx context.Context, t *tx) error {
		var err error
		rs, err = l.applyIn(ctx, t, ops)
		return err
	})
	if err != nil {
		return nil, l.fail("apply", err)
	}
	return rs, nil
}

// applyIn applies ops in transaction t and commits.
func (l *Ledger) applyIn(ctx context.Context, t *tx, ops []currency.Op) ([]currency.Result, error) {
	s := l.newState(t)
	if err := s.prefetch(ctx, ops); err != nil {
		return nil, err
	}
	rs := make([]currency.Result, len(ops))
	for i, op := range ops {
		r, err := currency.Apply(ctx, s, op)
		if err != nil {
			return nil, err
		}
		rs[i] = r
	}
	if err := s.flush(ctx); err != nil {
		return nil, err
	}
	return rs, nil
}
