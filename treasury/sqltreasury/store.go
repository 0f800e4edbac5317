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
		var record string
		b := &pgx.Batch{}
		b.Queue(`SELECT record FROM treasury_actions WHERE idem_key = $1`, c.Action.Key).QueryRow(func(row pgx.Row) error {
			err := row.Scan(&record)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			found = err == nil
			return err
		})
		v := &view{Tx: t, s: s, read: map[[2]string]treasury.Setting{}}
		if st := c.Setting; st != nil && c.Plan == nil {
			v.queueSetting(b, st.Kind, st.Name)
		}
		if err := t.Send(ctx, b, c.Ops...); err != nil {
			return err
		}
		if found && !c.Unrecorded {
			return json.Unmarshal([]byte(record), &stored)
		}
		found = false
		ch := c
		ch.Action = treasury.Begin(c.Action)
		if c.Plan != nil {
			if err := c.Plan(ctx, v, &ch); err != nil {
				return err
			}
		}
		a := ch.Action
		if err := treasury.Watch(ctx, t, ch.Watch, a.Before); err != nil {
			return err
		}
		rs, err := t.Apply(ctx, ch.Ops...)
		if err != nil {
			return err
		}
		for _, r := range rs {
			if r.Err != nil {
				failed = r.Err
				return errUnwind
			}
		}
		if err := treasury.Watch(ctx, t, ch.Watch, a.After); err != nil {
			return err
		}
		a.At = s.now().UTC().Truncate(time.Microsecond)
		if st := ch.Setting; st != nil {
			old, _, err := v.stored(ctx, st.Kind, st.Name)
			if err != nil {
				return err
			}
			treasury.NoteSetting(a, st.Kind, old.Value, st.Value)
			// A removed setting keeps its row, without a value, so that
			// the next write's version follows its.
			t.Queue(`INSERT INTO treasury_settings (kind, name, value, set_by, set_at, version) VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (kind, name) DO UPDATE SET value = excluded.value, set_by = excluded.set_by, set_at = excluded.set_at, version = excluded.version`,
				st.Kind, st.Name, st.Value, a.Actor, a.At, old.Version+1)
		}
		done = a
		if c.Unrecorded {
			return nil
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

// view is a Plan's view of a commit: the ledger's transaction, and the
// settings read in it, each locked (FOR UPDATE) until the commit.
type view struct {
	*sqlledger.Tx
	s    *Store
	read map[[2]string]treasury.Setting
}

func (v *view) Now() time.Time { return v.s.now() }

func (v *view) Setting(ctx context.Context, kind, name string) (treasury.Setting, bool, error) {
	st, _, err := v.stored(ctx, kind, name)
	return st, err == nil && st.Value != "", err
}

// stored is the setting's row as the transaction read it (reading it
// first if it has not), a removed one included; found is false where
// there is no row.
func (v *view) stored(ctx context.Context, kind, name string) (treasury.Setting, bool, error) {
	if st, ok := v.read[[2]string{kind, name}]; ok {
		return st, st.Version > 0, nil
	}
	b := &pgx.Batch{}
	v.queueSetting(b, kind, name)
	if err := v.Send(ctx, b); err != nil {
		return treasury.Setting{}, false, err
	}
	st := v.read[[2]string{kind, name}]
	return st, st.Version > 0, nil
}

// queueSetting queues the read of a setting's row into v.read.
func (v *view) queueSetting(b *pgx.Batch, kind, name string) {
	b.Queue(`SELECT value, set_by, set_at, version FROM treasury_settings WHERE kind = $1 AND name = $2 FOR UPDATE`, kind, name).QueryRow(func(row pgx.Row) error {
		st := treasury.Setting{Kind: kind, Name: name}
		err := row.Scan(&st.Value, &st.SetBy, &st.SetAt, &st.Version)
		if errors.Is(err, pgx.ErrNoRows) {
			err = nil
		}
		st.SetAt = st.SetAt.UTC()
		v.read[[2]string{kind, name}] = st
		return err
	})
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
	b.Queue(`SELECT name, value, set_by, set_at, version FROM treasury_settings WHERE kind = $1 AND value <> '' ORDER BY name`, kind).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			st := treasury.Setting{Kind: kind}
			if err := rows.Scan(&st.Name, &st.Value, &st.SetBy, &st.SetAt, &st.Version); err != nil {
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

func (s *Store) Now() time.Time { return s.now() }
