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

// Balances reads the accounts as Balance does, in one statement.
func (l *Ledger) Balances(ctx context.Context, ids ...currency.AccountID) ([]currency.Balance, error) {
	out := make([]currency.Balance, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	b := &pgx.Batch{}
	l.QueueBalances(b, out, ids...)
	if err := l.poolSend(ctx, b); err != nil {
		return nil, l.fail("balances", err)
	}
	return out, nil
}

// QueueBalances queues into b the statement of Balances, which fills out
// (as long as ids) when b runs: for a caller that reads the balances
// beside statements of its own, in one round trip (Send). An account
// that does not exist leaves its Balance zero.
func (l *Ledger) QueueBalances(b *pgx.Batch, out []currency.Balance, ids ...currency.AccountID) {
	uids := make([]uid, len(ids))
	for i, id := range ids {
		uids[i] = accountUID(id)
	}
	b.Queue(`SELECT a.id, a.currency, a.balance::TEXT,
  (SELECT COALESCE(SUM(h.amount), 0) FROM holds h WHERE h.from_uid = a.uid AND h.status = 'open')::TEXT
FROM accounts a WHERE a.uid = ANY($1::UUID[])`, uids).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var id, cur, available, held string
			if err := rows.Scan(&id, &cur, &available, &held); err != nil {
				return err
			}
			bal := currency.Balance{Account: currency.AccountID(id), Currency: currency.Code(cur)}
			var err error
			if bal.Available, err = parseDec(available); err != nil {
				return err
			}
			if bal.Held, err = parseDec(held); err != nil {
				return err
			}
			for i, id := range ids {
				if id == bal.Account {
					out[i] = bal // every place it was asked for
				}
			}
		}
		return rows.Err()
	})
}
