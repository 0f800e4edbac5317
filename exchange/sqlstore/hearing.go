package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/protocol"
)

// keepHearings is how long an instance's hearing stays after its last
// write: an instance that stopped leaves one row behind it for this long.
const keepHearings = time.Hour

// Hear writes h as its instance's row (migrations/0008_hearings.sql) and
// deletes rows not written for keepHearings, in one round trip.
func (s *Store) Hear(ctx context.Context, h exchange.Hearing) error {
	servers, err := json.Marshal(h.Servers)
	if err != nil {
		return fmt.Errorf("sqlstore: encode hearing: %w", err)
	}
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO hearings (instance, heard_at, servers) VALUES ($1, $2, $3)
ON CONFLICT (instance) DO UPDATE SET heard_at = excluded.heard_at, servers = excluded.servers`, h.Instance, h.At, servers)
	b.Queue(`DELETE FROM hearings WHERE heard_at < $1`, h.At.Add(-keepHearings))
	return s.l.Send(ctx, b)
}

// Heard reads the rows written at or after since.
func (s *Store) Heard(ctx context.Context, since time.Time) ([]exchange.Hearing, error) {
	var out []exchange.Hearing
	b := &pgx.Batch{}
	b.Queue(`SELECT instance, heard_at, servers FROM hearings WHERE heard_at >= $1 ORDER BY instance`, since).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var h exchange.Hearing
			var servers []byte
			if err := rows.Scan(&h.Instance, &h.At, &servers); err != nil {
				return err
			}
			if err := json.Unmarshal(servers, &h.Servers); err != nil {
				return fmt.Errorf("hearing of %s: %w", h.Instance, err)
			}
			h.At = h.At.UTC()
			out = append(out, h)
		}
		return rows.Err()
	})
	if err := s.l.Send(ctx, b); err != nil {
		return nil, err
	}
	return out, nil
}

// Records counts, in the database, the contracts accepted at or after
// since by server, walking the index contracts_accepted_at
// (migrations/0003): one row a server comes back, however many
// contracts. A lost contract is told by its record's reason.
func (s *Store) Records(ctx context.Context, since time.Time) (map[string]protocol.Record, error) {
	out := map[string]protocol.Record{}
	b := &pgx.Batch{}
	b.Queue(`SELECT server, count(*),
  sum(CASE WHEN state IN ('running', 'settled') THEN 1 ELSE 0 END),
  sum(CASE WHEN state = 'voided' THEN 1 ELSE 0 END),
  sum(CASE WHEN state = 'settled' AND record LIKE '%"reason":"server_lost"%' THEN 1 ELSE 0 END)
FROM contracts WHERE accepted_at >= $1 GROUP BY server`, since).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var server string
			var r protocol.Record
			if err := rows.Scan(&server, &r.Accepted, &r.Started, &r.NotStarted, &r.Lost); err != nil {
				return err
			}
			out[server] = r
		}
		return rows.Err()
	})
	if err := s.l.Send(ctx, b); err != nil {
		return nil, err
	}
	return out, nil
}
