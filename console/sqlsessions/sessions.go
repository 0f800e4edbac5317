// Package sqlsessions keeps the console's sessions in the SQL ledger's
// database (PostgreSQL or CockroachDB): every console on that database
// sees a logout, a change of password or "end all sessions" at once, and
// sessions outlive a restart. The table is in migrations/, applied by
// Open.
package sqlsessions

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/console"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/sqlledger"
)

var _ console.Sessions = (*Sessions)(nil)

// scope is the package's name for its migrations in the ledger's database.
const scope = "console/sqlsessions"

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Sessions are console sessions in a sqlledger.Ledger's database.
type Sessions struct{ l *sqlledger.Ledger }

// Open applies the package's migrations that l's database lacks. The
// ledger stays the caller's to close.
func Open(ctx context.Context, l *sqlledger.Ledger) (*Sessions, error) {
	fsys, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	if err := l.Migrate(ctx, scope, fsys); err != nil {
		return nil, fmt.Errorf("console sessions: %w", err)
	}
	return &Sessions{l: l}, nil
}

// Beside is where the console keeps its sessions beside ledger l: in l's
// database for the SQL ledger, in the process's memory otherwise.
func Beside(ctx context.Context, l currency.Ledger) (console.Sessions, error) {
	if sl, ok := l.(*sqlledger.Ledger); ok {
		return Open(ctx, sl)
	}
	return console.NewMemSessions(), nil
}

func (s *Sessions) Create(ctx context.Context, x console.Session) error {
	var inserted bool
	err := s.l.Tx(ctx, func(ctx context.Context, t *sqlledger.Tx) error {
		inserted = false
		b := &pgx.Batch{}
		b.Queue(`DELETE FROM console_sessions WHERE expires < $1`, x.Created)
		b.Queue(`INSERT INTO console_sessions (id, username, role, stamp, csrf, created, expires)
VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING`,
			x.ID, x.User, string(x.Role), x.Stamp, x.CSRF, x.Created, x.Expires).Exec(func(ct pgconn.CommandTag) error {
			inserted = ct.RowsAffected() == 1
			return nil
		})
		return t.Send(ctx, b)
	})
	if err != nil {
		return fmt.Errorf("console session of %s: %w", x.User, err)
	}
	if !inserted {
		return bourse.Errorf(bourse.EConflict, "sqlsessions.Create", "a session with this id exists")
	}
	return nil
}

func (s *Sessions) Session(ctx context.Context, id string) (console.Session, error) {
	var x console.Session
	found := false
	b := &pgx.Batch{}
	b.Queue(`SELECT id, username, role, stamp, csrf, created, expires FROM console_sessions WHERE id = $1`, id).QueryRow(func(row pgx.Row) error {
		err := scan(row, &x)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		found = err == nil
		return err
	})
	if err := s.l.Send(ctx, b); err != nil {
		return console.Session{}, fmt.Errorf("console session: %w", err)
	}
	if !found {
		return console.Session{}, bourse.Errorf(bourse.ENotFound, "sqlsessions.Session", "no such session")
	}
	return x, nil
}

func (s *Sessions) End(ctx context.Context, id string) error {
	return s.exec(ctx, "end a console session", `DELETE FROM console_sessions WHERE id = $1`, id)
}

func (s *Sessions) EndUser(ctx context.Context, user string) error {
	return s.exec(ctx, "end the console sessions of "+user, `DELETE FROM console_sessions WHERE username = $1`, user)
}

func (s *Sessions) EndAll(ctx context.Context) error {
	return s.exec(ctx, "end every console session", `DELETE FROM console_sessions`)
}

func (s *Sessions) List(ctx context.Context, now time.Time) ([]console.Session, error) {
	var out []console.Session
	b := &pgx.Batch{}
	b.Queue(`SELECT id, username, role, stamp, csrf, created, expires FROM console_sessions
WHERE expires >= $1 ORDER BY created, id`, now).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var x console.Session
			if err := scan(rows, &x); err != nil {
				return err
			}
			out = append(out, x)
		}
		return rows.Err()
	})
	if err := s.l.Send(ctx, b); err != nil {
		return nil, fmt.Errorf("console sessions: %w", err)
	}
	return out, nil
}

// exec runs one statement in a transaction of its own.
func (s *Sessions) exec(ctx context.Context, what, sql string, args ...any) error {
	err := s.l.Tx(ctx, func(_ context.Context, t *sqlledger.Tx) error {
		t.Queue(sql, args...)
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

func scan(row pgx.Row, x *console.Session) error {
	var role string
	if err := row.Scan(&x.ID, &x.User, &role, &x.Stamp, &x.CSRF, &x.Created, &x.Expires); err != nil {
		return err
	}
	x.Role = console.Role(role)
	x.Created, x.Expires = x.Created.UTC(), x.Expires.UTC()
	return nil
}
