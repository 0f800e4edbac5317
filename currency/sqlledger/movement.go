package sqlledger

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bourse/bourse/currency"
)

// Statement lists the account's entries after seq `after`, up to limit of
// them (0 or less: all), each joined with its movement.
func (l *Ledger) Statement(ctx context.Context, id currency.AccountID, after int64, limit int) ([]currency.Entry, error) {
	n := int64(limit)
	if limit <= 0 {
		n = math.MaxInt64
	}
	rows, err := l.pool.Query(ctx, `SELECT e.seq, m.id, m.idem_key, m.from_account, m.to_account, e.amount::TEXT,
  e.balance_after::TEXT, m.hold_id, m.memo, m.posted, m.posted_ns
FROM entries e JOIN movements m ON m.uid = e.movement_uid
WHERE e.account_uid = $1 AND e.seq > $2
ORDER BY e.seq LIMIT $3`, accountUID(id), max(after, 0), n)
	if err != nil {
		return nil, l.fail("statement", err)
	}
	es, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (currency.Entry, error) {
		e := currency.Entry{Account: id}
		var from, to, amount, balance, hold string
		var posted time.Time
		var ns int32
		if err := row.Scan(&e.Seq, &e.Movement, &e.Key, &from, &to, &amount, &balance, &hold, &e.Memo, &posted, &ns); err != nil {
			return e, err
		}
		e.Counterparty = currency.AccountID(to)
		if currency.AccountID(to) == id {
			e.Counterparty = currency.AccountID(from)
		}
		e.Hold, e.At = currency.HoldID(hold), joinTime(posted, ns)
		var err error
		if e.Amount, err = parseDec(amount); err != nil {
			return e, err
		}
		e.Balance, err = parseDec(balance)
		return e, err
	})
	if err != nil {
		return nil, l.fail("statement", err)
	}
	if len(es) == 0 {
		// No entries, or no account?
		var one int
		err := l.pool.QueryRow(ctx, `SELECT 1 FROM accounts WHERE uid = $1`, accountUID(id)).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, currency.NotFound("sqlledger.Statement", "account "+string(id))
		}
		if err != nil {
			return nil, l.fail("statement", err)
		}
	}
	return es, nil
}
