package sqlledger

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/bourse/bourse/currency"
)

func (l *Ledger) Account(ctx context.Context, id currency.AccountID) (currency.Account, error) {
	a, err := scanAccount(l.pool.QueryRow(ctx, `SELECT `+accountColumns+` FROM accounts WHERE uid = $1`, accountUID(id)))
	if errors.Is(err, pgx.ErrNoRows) {
		return currency.Account{}, currency.NotFound("sqlledger.Account", "account "+string(id))
	}
	if err != nil {
		return currency.Account{}, l.fail("account", err)
	}
	return a.Account, nil
}

// Balance reads the account's balance and the sum of its open holds in one
// statement, so the two agree.
func (l *Ledger) Balance(ctx context.Context, id currency.AccountID) (currency.Balance, error) {
	var cur, available, held string
	err := l.pool.QueryRow(ctx, `SELECT a.currency, a.balance::TEXT,
  (SELECT COALESCE(SUM(h.amount), 0) FROM holds h WHERE h.from_uid = a.uid AND h.status = 'open')::TEXT
FROM accounts a WHERE a.uid = $1`, accountUID(id)).Scan(&cur, &available, &held)
	if errors.Is(err, pgx.ErrNoRows) {
		return currency.Balance{}, currency.NotFound("sqlledger.Balance", "account "+string(id))
	}
	if err != nil {
		return currency.Balance{}, l.fail("balance", err)
	}
	b := currency.Balance{Account: id, Currency: currency.Code(cur)}
	if b.Available, err = parseDec(available); err != nil {
		return currency.Balance{}, l.fail("balance", err)
	}
	if b.Held, err = parseDec(held); err != nil {
		return currency.Balance{}, l.fail("balance", err)
	}
	return b, nil
}
