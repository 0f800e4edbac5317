package sqlledger

import (
	"context"

	"github.com/bourse/bourse/currency"
)

// CreateCurrency runs currency.CreateCurrency in a transaction.
func (l *Ledger) CreateCurrency(ctx context.Context, c currency.Currency) error {
	var s *state
	err := l.run(ctx, "create currency", func(ctx context.Context, t *tx) error {
		s = l.newState(t)
		if err := currency.CreateCurrency(ctx, s, c); err != nil {
			return err
		}
		return s.flush(ctx)
	})
	if err != nil {
		return l.fail("create currency", err)
	}
	for _, c := range s.currencies {
		l.cacheCurrency(c)
	}
	return nil
}

// OpenAccount runs currency.OpenAccount in a transaction.
func (l *Ledger) OpenAccount(ctx context.Context, a currency.Account) (currency.Account, error) {
	var opened currency.Account
	err := l.run(ctx, "open account", func(ctx context.Context, t *tx) error {
		s := l.newState(t)
		ids := []currency.AccountID{a.ID}
		if a.Parent != "" {
			ids = append(ids, a.Parent)
		}
		if err := s.load(ctx, ids, nil, nil); err != nil {
			return err
		}
		var err error
		if opened, err = currency.OpenAccount(ctx, s, a); err != nil {
			return err
		}
		return s.flush(ctx)
	})
	if err != nil {
		return currency.Account{}, l.fail("open account", err)
	}
	return opened, nil
}
