package sqlledger

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/currency"
)

// sender runs a batch: a transaction's (tx.send) or the pool's.
type sender func(context.Context, *pgx.Batch) error

func (l *Ledger) poolSend(ctx context.Context, b *pgx.Batch) error {
	return l.pool.SendBatch(ctx, b).Close()
}

func (l *Ledger) readCurrency(ctx context.Context, send sender, code currency.Code) (c currency.Currency, found bool, err error) {
	b := &pgx.Batch{}
	b.Queue(`SELECT scale FROM currencies WHERE code = $1`, string(code)).QueryRow(func(row pgx.Row) error {
		err := row.Scan(&c.Scale)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return nil
		case err != nil:
			return err
		}
		c.Code, found = code, true
		return nil
	})
	if err := send(ctx, b); err != nil {
		return currency.Currency{}, false, err
	}
	return c, found, nil
}

func (l *Ledger) Currency(ctx context.Context, code currency.Code) (currency.Currency, error) {
	if c, ok := l.cachedCurrency(code); ok {
		return c, nil
	}
	c, found, err := l.readCurrency(ctx, l.poolSend, code)
	if err != nil {
		return currency.Currency{}, l.fail("currency", err)
	}
	if !found {
		return currency.Currency{}, &bourse.Error{Code: bourse.EUnknownCurrency, Op: "sqlledger.Currency", Message: "no currency " + string(code)}
	}
	l.cacheCurrency(c)
	return c, nil
}
