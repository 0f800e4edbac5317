package sqlledger

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/bourse/bourse"
)

// The schema's versions, NNNN_name.sql, applied in order, each once. A
// version once released is never edited: changes go in a new file.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

// migrations are the ledger's own.
func migrations() ([]migration, error) {
	fsys, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	return readMigrations(fsys)
}

// readMigrations reads the files NNNN_name.sql at the root of fsys, in the
// order of their numbers.
func readMigrations(fsys fs.FS) ([]migration, error) {
	files, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, f := range files {
		base := strings.TrimSuffix(path.Base(f), ".sql")
		num, name, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must be NNNN_name.sql", f)
		}
		sql, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: name, sql: string(sql)})
	}
	slices.SortFunc(ms, func(a, b migration) int { return a.version - b.version })
	for i := 1; i < len(ms); i++ {
		if ms[i].version == ms[i-1].version {
			return nil, fmt.Errorf("two migrations numbered %d", ms[i].version)
		}
	}
	return ms, nil
}

// schema_migrations lists the versions applied. Its row 0 is a lock: every
// migrating transaction updates it first, so that of several processes
// opening a new database at once one migrates and the others wait, fail to
// serialize, retry, and find the work done.
const bootstrap = `CREATE TABLE IF NOT EXISTS schema_migrations (
    version INT PRIMARY KEY,
    name    TEXT NOT NULL,
    applied TIMESTAMPTZ NOT NULL DEFAULT now()
);
INSERT INTO schema_migrations (version, name) VALUES (0, 'lock') ON CONFLICT (version) DO NOTHING`

// migrate applies the ledger's migrations that the database lacks, in one
// transaction, retried whole.
func (l *Ledger) migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	// Concurrent CREATE TABLE IF NOT EXISTS can still collide in
	// PostgreSQL's catalog (23505, 42P07): retry those too.
	if err := l.retry(ctx, "migrate", func() error {
		_, err := l.pool.Exec(ctx, bootstrap)
		return ddlRace(err)
	}); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	return l.applyMigrations(ctx, "", ms)
}

// Migrate applies the migrations of another package that keeps tables in
// the ledger's database (exchange/sqlstore keeps its contracts beside the
// ledger so that Tx can write both): the files NNNN_name.sql at the root of
// fsys that the database lacks, in order, in one transaction. Their
// versions count from 1 for each scope, the package's name
// ("exchange/sqlstore"), apart from the ledger's own, and are listed in
// package_migrations. As with the ledger's migrations, a version once
// released is never edited, and several processes may migrate at once: one
// does the work, the others find it done.
func (l *Ledger) Migrate(ctx context.Context, scope string, fsys fs.FS) error {
	if scope == "" {
		return &bourse.Error{Code: bourse.EInvalid, Op: "sqlledger.Migrate", Field: "scope", Message: "required"}
	}
	ms, err := readMigrations(fsys)
	if err != nil {
		return l.fail("migrate "+scope, err)
	}
	if err := l.applyMigrations(ctx, scope, ms); err != nil {
		return l.fail("migrate "+scope, err)
	}
	return nil
}

// applyMigrations applies those of ms that the database lacks: the
// ledger's (scope "") or another package's. Every migrating transaction
// first updates the lock row of schema_migrations, so migrations of any
// scope run one at a time.
func (l *Ledger) applyMigrations(ctx context.Context, scope string, ms []migration) error {
	list, listArgs := `SELECT version FROM schema_migrations`, []any{}
	record := func(m migration) (string, []any) {
		return `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, []any{m.version, m.name}
	}
	if scope != "" {
		list, listArgs = `SELECT version FROM package_migrations WHERE package = $1`, []any{scope}
		record = func(m migration) (string, []any) {
			return `INSERT INTO package_migrations (package, version, name) VALUES ($1, $2, $3)`, []any{scope, m.version, m.name}
		}
	}
	return l.retry(ctx, "migrate", func() error {
		return ddlRace(pgx.BeginTxFunc(ctx, l.pool, pgx.TxOptions{IsoLevel: pgx.Serializable}, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `UPDATE schema_migrations SET applied = now() WHERE version = 0`); err != nil {
				return err
			}
			rows, err := tx.Query(ctx, list, listArgs...)
			if err != nil {
				return err
			}
			applied, err := pgx.CollectRows(rows, pgx.RowTo[int32])
			if err != nil {
				return err
			}
			for _, m := range ms {
				if slices.Contains(applied, int32(m.version)) {
					continue
				}
				l.log.Info("sqlledger: migrating", "scope", scope, "version", m.version, "name", m.name)
				if _, err := tx.Exec(ctx, m.sql); err != nil {
					return fmt.Errorf("migration %d_%s: %w", m.version, m.name, err)
				}
				sql, args := record(m)
				if _, err := tx.Exec(ctx, sql, args...); err != nil {
					return err
				}
			}
			return nil
		}))
	})
}

// ddlRace turns the errors of two sessions creating the same object at once
// into a serialization failure, which retry retries.
func ddlRace(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "42P07" || pe.Code == "42710" || pe.Code == "23505") {
		return &pgconn.PgError{Code: "40001", Message: "concurrent schema change: " + pe.Message}
	}
	return err
}
