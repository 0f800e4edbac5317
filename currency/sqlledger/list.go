package sqlledger

import (
	"context"

	"github.com/bourse/bourse/currency"
)

// Currencies lists every currency, by code.
func (l *Ledger) Currencies(ctx context.Context) ([]currency.Currency, error) {
	rows, err := l.pool.Query(ctx, `SELECT code, scale FROM currencies ORDER BY code`)
	if err != nil {
		return nil, l.fail("currencies", err)
	}
	defer rows.Close()
	var out []currency.Currency
	for rows.Next() {
		var c currency.Currency
		var code string
		if err := rows.Scan(&code, &c.Scale); err != nil {
			return nil, l.fail("currencies", err)
		}
		c.Code = currency.Code(code)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, l.fail("currencies", err)
	}
	return out, nil
}

// Accounts lists a page of accounts in ID order, walking the unique index
// on id from q.After.
func (l *Ledger) Accounts(ctx context.Context, q currency.AccountQuery) ([]currency.Account, error) {
	rows, err := l.pool.Query(ctx, `SELECT `+accountColumns+` FROM accounts
WHERE id > $1 AND ($2 = '' OR currency = $2) AND ($3 = '' OR kind = $3)
ORDER BY id LIMIT $4`, string(q.After), string(q.Currency), string(q.Kind), q.PageLimit())
	if err != nil {
		return nil, l.fail("accounts", err)
	}
	defer rows.Close()
	var out []currency.Account
	for rows.Next() {
		a, err := scanAccount(rows)
		if err != nil {
			return nil, l.fail("accounts", err)
		}
		out = append(out, a.Account)
	}
	if err := rows.Err(); err != nil {
		return nil, l.fail("accounts", err)
	}
	return out, nil
}
