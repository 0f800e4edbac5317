package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/canary"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/protocol"
)

// PutCanary writes r as its contract's row of canaries
// (migrations/0009_canaries.sql), in place of the row before, if the
// contract is in the store and r.Server's: the check and the write in
// one round trip.
func (s *Store) PutCanary(ctx context.Context, r canary.Result) error {
	const op = "sqlstore.PutCanary"
	if err := r.Check(); err != nil {
		return err
	}
	body, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("%s: encode: %w", op, err)
	}
	var deviation *string
	if r.Conclusive() {
		d := r.Deviation.String()
		deviation = &d
	}
	uid := contractUID(r.Contract)
	var server *string
	var written int64
	b := &pgx.Batch{}
	b.Queue(`SELECT server FROM contracts WHERE uid = $1`, uid).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			if err := rows.Scan(&server); err != nil {
				return err
			}
		}
		return rows.Err()
	})
	b.Queue(`INSERT INTO canaries (contract, server, judged_at, verdict, deviation, result)
SELECT $1, server, $3, $4, $5::DECIMAL, $6 FROM contracts WHERE uid = $7 AND server = $2
ON CONFLICT (contract) DO UPDATE SET judged_at = excluded.judged_at, verdict = excluded.verdict,
  deviation = excluded.deviation, result = excluded.result`,
		r.Contract, r.Server, r.At, string(r.Verdict), deviation, body, uid).Exec(func(ct pgconn.CommandTag) error {
		written = ct.RowsAffected()
		return nil
	})
	if err := s.l.Send(ctx, b); err != nil {
		return err
	}
	switch {
	case server == nil:
		return currency.NotFound(op, "contract "+r.Contract)
	case *server != r.Server:
		return &bourse.Error{Code: bourse.EInvalid, Op: op, Field: "server",
			Message: "contract " + r.Contract + " is " + *server + "'s, not " + r.Server + "'s"}
	case written != 1:
		return fmt.Errorf("%s: contract %s: %d rows written", op, r.Contract, written)
	}
	return nil
}

// Canaries counts, in the database, the results judged at or after since
// by server, walking the index canaries_judged_at: one row a server, with
// the passes judged after its latest failure. The worst deviation is the
// greatest or the least, whichever is larger in size.
func (s *Store) Canaries(ctx context.Context, since time.Time) (map[string]protocol.Canaries, error) {
	out := map[string]protocol.Canaries{}
	b := &pgx.Batch{}
	b.Queue(`WITH w AS (SELECT server, judged_at, verdict, deviation FROM canaries WHERE judged_at >= $1),
  last AS (SELECT server, max(judged_at) AS failed_at FROM w WHERE verdict = 'failed' GROUP BY server)
SELECT w.server, count(*),
  count(CASE WHEN w.verdict = 'passed' THEN 1 END),
  count(CASE WHEN w.verdict = 'failed' THEN 1 END),
  count(CASE WHEN w.verdict = 'inconclusive' THEN 1 END),
  count(CASE WHEN w.verdict = 'passed' AND w.judged_at > last.failed_at THEN 1 END),
  max(w.deviation)::TEXT, min(w.deviation)::TEXT
FROM w LEFT JOIN last ON last.server = w.server GROUP BY w.server`, since).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var server string
			var c protocol.Canaries
			var hi, lo *string
			if err := rows.Scan(&server, &c.Run, &c.Passed, &c.Failed, &c.Inconclusive, &c.PassedSince, &hi, &lo); err != nil {
				return err
			}
			for _, s := range []*string{hi, lo} {
				if s == nil {
					continue
				}
				d, err := decimal.NewFromString(*s)
				if err != nil {
					return fmt.Errorf("canaries of %s: deviation %q: %w", server, *s, err)
				}
				if c.Worst == nil || d.Abs().GreaterThan(c.Worst.Abs()) {
					c.Worst = &d
				}
			}
			out[server] = c
		}
		return rows.Err()
	})
	if err := s.l.Send(ctx, b); err != nil {
		return nil, err
	}
	return out, nil
}
