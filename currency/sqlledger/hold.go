package sqlledger

import (
	"context"
	"errors"
	"math"

	"github.com/jackc/pgx/v5"

	"github.com/bourse/bourse/currency"
)

func (l *Ledger) Hold(ctx context.Context, id currency.HoldID) (currency.Hold, error) {
	h, err := scanHold(l.pool.QueryRow(ctx, `SELECT `+holdColumns+` FROM holds WHERE uid = $1`, holdUID(id)))
	if errors.Is(err, pgx.ErrNoRows) {
		return currency.Hold{}, currency.NotFound("sqlledger.Hold", "hold "+string(id))
	}
	if err != nil {
		return currency.Hold{}, l.fail("hold", err)
	}
	return h, nil
}

// DueHolds lists open holds whose deadline is at or before the ledger's
// now, oldest first (then by ID); a limit of 0 or less means all.
func (l *Ledger) DueHolds(ctx context.Context, limit int) ([]currency.Hold, error) {
	now, ns := splitTime(l.now())
	n := int64(limit)
	if limit <= 0 {
		n = math.MaxInt64
	}
	rows, err := l.pool.Query(ctx, `SELECT `+holdColumns+` FROM holds
WHERE status = 'open' AND deadline <= $1 AND (deadline < $1 OR deadline_ns <= $2)
ORDER BY deadline, deadline_ns, id LIMIT $3`, now, ns, n)
	if err != nil {
		return nil, l.fail("due holds", err)
	}
	hs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (currency.Hold, error) { return scanHold(row) })
	if err != nil {
		return nil, l.fail("due holds", err)
	}
	return hs, nil
}
