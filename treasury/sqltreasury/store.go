// Package sqltreasury keeps the treasury's audit trail and settings in
// the SQL ledger's database (PostgreSQL or CockroachDB). Each Commit is
// one sqlledger.Ledger.Tx: the action's row, its setting and its ledger
// operations commit together, and a transaction that fails to serialize
// (two administrators using one key at once, say) runs again and finds
// the other's action.
//
// The tables are in migrations/, applied by Open.
package sqltreasury

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/sqlledger"
	"github.com/bourse/bourse/treasury"
)

var _ treasury.Store = (*Store)(nil)

// scope is the package's name for its migrations in the ledger's database.
const scope = "treasury/sqltreasury"

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Store is a treasury.Store in a sqlledger.Ledger's database.
type Store struct {
	l   *sqlledger.Ledger
	now func() time.Time
}

// Open applies the package's migrations that l's database lacks. now is
// the clock of the trail (time.Now if nil). The ledger stays the caller's
// to close.
func Open(ctx context.Context, l *sqlledger.Ledger, now func() time.Time) (*Store, error) {
	fsys, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	if err := l.Migrate(ctx, scope, fsys); err != nil {
		return nil, err
	}
	if now == nil {
		now = time.Now
	}
	return &Store{l: l, now: now}, nil
}

func (s *Store) Ledger() currency.Ledger { return s.l }

// errUnwind rolls back a change one of whose operations failed.
var errUnwind = errors.New("unwind")

func (s *Store) Commit(ctx context.Context, c treasury.Change) (treasury.Action, bool, error) {
	var (
		stored, done treasury.Action
		found        bool
		failed       error
	)
	err := s.l.Tx(ctx, func(ctx context.Context, t *sqlledger.Tx) error {
		stored, found, failed = treasury.Action{}, false, nil
		var record, oldSetting string
		b := &pgx.Batch{}
		b.Queue(`SELECT record FROM treasury_actions WHERE idem_key = $1`, c.Action.Key).QueryRow(func(row pgx.Row) error {
			err := row.Scan(&record)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			found = err == nil
			return err
		})
		if st := c.Setting; st != nil {
			b.Queue(`SELECT value FROM treasury_settings WHERE kind = $1 AND name = $2 FOR UPDATE`, st.Kind, st.Name).QueryRow(func(row pgx.Row) error {
				err := row.Scan(&oldSetting)
				if errors.Is(err, pgx.ErrNoRows) {
					return nil
				}
				return err
			})
		}
		if err := t.Send(ctx, b, c.Ops...); err != nil {
			return err
		}
		if found {
			return json.Unmarshal([]byte(record), &stored)
		}
		a := treasury.Begin(c.Action)
		if err := watch(ctx, t, c.Watch, a.Before); err != nil {
			return err
		}
		rs, err := t.Apply(ctx, c.Ops...)
		if err != nil {
			return err
		}
		for _, r := range rs {
			if r.Err != nil {
				failed = r.Err
				return errUnwind
			}
		}
		if err := watch(ctx, t, c.Watch, a.After); err != nil {
			return err
		}
		a.At = s.now().UTC().Truncate(time.Microsecond)
		if st := c.Setting; st != nil {
			treasury.NoteSetting(a, st.Kind, oldSetting, st.Value)
			if st.Value == "" {
				t.Queue(`DELETE FROM treasury_settings WHERE kind = $1 AND name = $2`, st.Kind, st.Name)
			} else {
				t.Queue(`INSERT INTO treasury_settings (kind, name, value, set_by, set_at) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (kind, name) DO UPDATE SET value = excluded.value, set_by = excluded.set_by, set_at = excluded.set_at`,
					st.Kind, st.Name, st.Value, a.Actor, a.At)
			}
		}
		rec, err := json.Marshal(a)
		if err != nil {
			return err
		}
		t.Queue(`INSERT INTO treasury_actions (idem_key, at, actor, kind, target, record) VALUES ($1, $2, $3, $4, $5, $6)`,
			a.Key, a.At, a.Actor, a.Kind, a.Target, string(rec))
		done = a
		return nil
	})
	switch {
	case errors.Is(err, errUnwind):
		return treasury.Action{}, false, failed
	case err != nil:
		return treasury.Action{}, false, err
	case found:
		return treasury.Replay(stored, c.Action)
	}
	return done, true, nil
}

// watch puts the balances of ids, as the transaction sees them, in into.
func watch(ctx context.Context, t *sqlledger.Tx, ids []currency.AccountID, into map[string]string) error {
	for _, id := range ids {
		bal, found, err := t.Balance(ctx, id)
		if err != nil {
			return err
		}
		if found {
			into[string(id)] = bal.String()
		}
	}
	return nil
}

func (s *Store) Actions(ctx context.Context, before string, limit int) ([]treasury.Action, error) {
	var out []treasury.Action
	b := &pgx.Batch{}
	b.Queue(`SELECT record FROM treasury_actions
WHERE $1 = '' OR (at, idem_key) < (SELECT at, idem_key FROM treasury_actions WHERE idem_key = $1)
ORDER BY at DESC, idem_key DESC LIMIT $2`, before, treasury.PageLimit(limit)).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var rec string
			if err := rows.Scan(&rec); err != nil {
				return err
			}
			var a treasury.Action
			if err := json.Unmarshal([]byte(rec), &a); err != nil {
				return fmt.Errorf("action record: %w", err)
			}
			out = append(out, a)
		}
		return rows.Err()
	})
	if err := s.l.Send(ctx, b); err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Store) Settings(ctx context.Context, kind string) ([]treasury.Setting, error) {
	var out []treasury.Setting
	b := &pgx.Batch{}
	b.Queue(`SELECT name, value, set_by, set_at FROM treasury_settings WHERE kind = $1 ORDER BY name`, kind).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			st := treasury.Setting{Kind: kind}
			if err := rows.Scan(&st.Name, &st.Value, &st.SetBy, &st.SetAt); err != nil {
				return err
			}
			st.SetAt = st.SetAt.UTC()
			out = append(out, st)
		}
		return rows.Err()
	})
	if err := s.l.Send(ctx, b); err != nil {
		return nil, err
	}
	return out, nil
}
