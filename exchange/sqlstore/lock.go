package sqlstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/exchange"
)

// Request locks (exchange.Lock) live in the table offer_claims, whose
// name, and its column claim_until, are from before the lock was called
// a lock (migrations/0004_claims.sql): renaming a table is a migration
// that every deployment would run for a word.

// Lock takes the lock in one round trip: an upsert that takes it where
// no negotiation holds it (or the caller does, or the holder's time has
// passed), then a read of the row as it stands.
func (s *Store) Lock(ctx context.Context, c exchange.Lock, now time.Time) (exchange.Locked, error) {
	got, _, err := s.LockFunds(ctx, c, now)
	return got, err
}

// LockFunds sends Lock's statements and the ledger's read of the
// balances (sqlledger.QueueBalances) in one batch: one round trip.
func (s *Store) LockFunds(ctx context.Context, c exchange.Lock, now time.Time, accounts ...currency.AccountID) (exchange.Locked, []currency.Balance, error) {
	var got exchange.Locked
	var outcome string
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO offer_claims (id, holder, claim_until, ended, outcome) VALUES ($1, $2, $3, '', '')
ON CONFLICT (id) DO UPDATE SET holder = excluded.holder, claim_until = excluded.claim_until
WHERE offer_claims.holder = '' OR offer_claims.holder = excluded.holder OR offer_claims.claim_until <= $4`, c.ID, c.Token, c.Until, now)
	// An ended negotiation's answer is kept keepEnded, by the database's
	// clock (the one that wrote ended_at).
	b.Queue(`SELECT holder, claim_until, CASE WHEN ended_at > current_timestamp - INTERVAL '`+keepEnded+`' THEN ended ELSE '' END,
CASE WHEN ended_at > current_timestamp - INTERVAL '`+keepEnded+`' THEN outcome ELSE '' END FROM offer_claims WHERE id = $1`, c.ID).QueryRow(func(row pgx.Row) error {
		return row.Scan(&got.Holder, &got.Until, &got.Ended, &outcome)
	})
	bals := make([]currency.Balance, len(accounts))
	if len(accounts) > 0 {
		s.l.QueueBalances(b, bals, accounts...)
	}
	if err := s.l.Send(ctx, b); err != nil {
		return exchange.Locked{}, nil, err
	}
	got.Until = got.Until.UTC()
	if outcome != "" {
		got.Outcome = []byte(outcome)
	}
	if got.Holder == c.Token {
		got.Mine, got.Holder, got.Until = true, "", time.Time{}
	}
	return got, bals, nil
}

// pruneEvery is how many Finishes pass between prunings of the locks
// ended over keepEnded ago.
const (
	pruneEvery = 1024
	keepEnded  = "1 minute"
)

func (s *Store) Finish(ctx context.Context, c exchange.Lock, outcome func() []byte) error {
	b := &pgx.Batch{}
	b.Queue(`UPDATE offer_claims SET holder = '', ended = $2, outcome = $3, ended_at = current_timestamp WHERE id = $1 AND holder = $2`,
		c.ID, c.Token, string(outcome()))
	if s.finished.Add(1)%pruneEvery == 0 {
		b.Queue(`DELETE FROM offer_claims WHERE holder = '' AND ended_at < current_timestamp - INTERVAL '` + keepEnded + `'`)
	}
	return s.l.Send(ctx, b)
}

// queueLocks queues the read of the holders of the locks of opens, each
// row locked until the commit, into holders.
func queueLocks(b *pgx.Batch, ids []string, holders map[string]string) {
	b.Queue(`SELECT id, holder FROM offer_claims WHERE id = ANY($1) ORDER BY id FOR UPDATE`, ids).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var id, holder string
			if err := rows.Scan(&id, &holder); err != nil {
				return err
			}
			holders[id] = holder
		}
		return rows.Err()
	})
}

// lockTaken is the refusal of an Open whose lock another try took over.
func lockTaken() error {
	return &bourse.Error{Code: bourse.EUnavailable, Op: "sqlstore.Open", Field: "request_id",
		Message: "another try of this request took over its negotiation; retry with the same request id for its answer"}
}
