// Package sqlledger is the currency.Ledger on PostgreSQL and CockroachDB,
// through pgx.
//
// The ledger's rules are not here: every write runs currency.Apply,
// currency.CreateCurrency or currency.OpenAccount over a currency.Books bound
// to one SERIALIZABLE transaction (state.go). That state reads the rows the
// operations need in one pipelined batch that starts with BEGIN, locking
// them (SELECT … FOR UPDATE) in key order, keeps them in memory while the
// rules run, and writes what changed in a second batch that ends with COMMIT
// (flush.go): two round trips per transaction, however many operations it
// carries. By default concurrent Apply calls share transactions (group.go).
//
// Transactions that fail to serialize (SQLSTATE 40001, or a deadlock,
// 40P01) are retried whole. On CockroachDB that is cockroach-go's
// crdbpgxv5.ExecuteTx; on PostgreSQL it is our own loop, because ExecuteTx's
// savepoint protocol is only correct on CockroachDB (see tx.go).
//
// Other packages may keep tables in the ledger's database and write them in
// the ledger's transactions, with its retries (Ledger.Tx, shared.go), so
// that their rows and the money they move commit together; Ledger.Migrate
// applies their schema. exchange/sqlstore keeps contracts so.
//
// The schema is in migrations/, applied by Open.
package sqlledger

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/currency"
)

var _ currency.Ledger = (*Ledger)(nil)

// Options configure a Ledger. The zero value works.
type Options struct {
	// Now is the ledger's clock; time.Now if nil.
	Now func() time.Time
	// MaxRetries bounds how often a transaction that failed to serialize is
	// tried again (after the first try); 0 means 30, a negative value none.
	MaxRetries int
	// MaxConns is the size of the connection pool; 0 keeps pgxpool's default
	// or the URL's pool_max_conns.
	MaxConns int32
	// Logger receives retries (at debug level) and migrations (info);
	// nothing is logged if nil.
	Logger *slog.Logger
	// GroupCommit coalesces concurrent Apply calls into one transaction
	// (see group.go): a group waits up to this long for the callers it
	// expects to join it. 0 means 200µs; a negative value turns group commit
	// off, and each Apply call runs its own transaction.
	GroupCommit time.Duration
	// GroupSize bounds the operations of one group; 0 means 256.
	GroupSize int
}

// Ledger is a currency.Ledger in a PostgreSQL or CockroachDB database. It is
// safe for concurrent use. Close it when done.
type Ledger struct {
	pool       *pgxpool.Pool
	now        func() time.Time
	log        *slog.Logger
	maxRetries int
	crdb       bool // the server is CockroachDB
	group      *grouper
	window     time.Duration // group commit's, if group is not nil
	groupSize  int
	retries    atomic.Int64 // transactions run again, for tests and benchmarks

	mu         sync.RWMutex
	currencies map[currency.Code]currency.Currency // immutable once created
}

// Open connects to the database at url (a postgres:// URL or DSN that pgx
// accepts), applies the migrations it lacks and returns the ledger. Several
// processes may Open the same database at once.
func Open(ctx context.Context, url string, opts Options) (*Ledger, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, &bourse.Error{Code: bourse.EInvalid, Op: "sqlledger.Open", Message: "bad database URL", Err: err}
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	cfg.AfterConnect = afterConnect
	l := &Ledger{
		now:        opts.Now,
		log:        opts.Logger,
		maxRetries: opts.MaxRetries,
		currencies: map[currency.Code]currency.Currency{},
	}
	if l.now == nil {
		l.now = time.Now
	}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	switch {
	case l.maxRetries == 0:
		l.maxRetries = 30
	case l.maxRetries < 0:
		l.maxRetries = 0
	}
	l.pool, err = pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, l.fail("open", err)
	}
	var version string
	if err := l.pool.QueryRow(ctx, "SELECT version()").Scan(&version); err != nil {
		l.pool.Close()
		return nil, l.fail("open", err)
	}
	l.crdb = strings.Contains(version, "CockroachDB")
	if err := l.migrate(ctx); err != nil {
		l.pool.Close()
		return nil, l.fail("migrate", err)
	}
	if opts.GroupCommit >= 0 {
		window, size := opts.GroupCommit, opts.GroupSize
		if window == 0 {
			window = 200 * time.Microsecond
		}
		if size <= 0 {
			size = 256
		}
		l.group = newGrouper(l, window, size)
		l.window, l.groupSize = window, size
	}
	return l, nil
}

// Close stops the group committer, if any, and closes the connections.
func (l *Ledger) Close() {
	if l.group != nil {
		l.group.close()
	}
	l.pool.Close()
}

// afterConnect sets up a new connection to PostgreSQL. Every statement of
// the ledger but Audit's reads rows by key, and pgx prepares them all:
//   - generic plans spare planning them at each execution, which
//     PostgreSQL's choice between custom and generic plans otherwise does
//     for some;
//   - a generic plan assumes ten keys in an array and, on a table that is
//     still small (or not yet analyzed), prefers a sequential scan to the
//     index. Besides growing slower with the table, a sequential scan takes
//     SERIALIZABLE's predicate lock on the whole table, which makes every
//     transaction conflict with every other: no sequential scans, then.
//   - no JIT compilation: with sequential scans off, a statement that has
//     no index to use (the exchange's prune of old hearings, its read of
//     the whole book) is costed at ten billion, far past jit_above_cost,
//     and PostgreSQL compiled it with LLVM at every execution: 50-230 ms
//     of the database's CPU for a statement that reads a few rows
//     (pg_stat_statements' jit columns, BenchmarkOffers on PostgreSQL,
//     2026-12-02). None of these short statements gains from JIT.
//
// Audit turns the first two back on for its own transaction.
func afterConnect(ctx context.Context, conn *pgx.Conn) error {
	if conn.PgConn().ParameterStatus("crdb_version") != "" {
		return nil
	}
	_, err := conn.Exec(ctx, "SET plan_cache_mode = force_generic_plan; SET enable_seqscan = off; SET jit = off")
	return err
}

// GroupCommit returns the ledger's group commit settings (Options): on
// is false where it is off. Packages that group their own transactions
// (exchange/sqlstore) follow them.
func (l *Ledger) GroupCommit() (window time.Duration, size int, on bool) {
	return l.window, l.groupSize, l.group != nil
}

// CockroachDB reports whether the database is CockroachDB rather than
// PostgreSQL.
func (l *Ledger) CockroachDB() bool { return l.crdb }

// fail gives an error the form callers expect: business errors as they
// are, a database that cannot be reached as EUnavailable, anything else
// wrapped with what we were doing.
func (l *Ledger) fail(op string, err error) error {
	var be *bourse.Error
	switch {
	case errors.As(err, &be):
		return err
	case unavailable(err):
		return &bourse.Error{Code: bourse.EUnavailable, Op: "sqlledger." + op, Message: "database unavailable", Err: err}
	case retryable(err):
		// Retries ran out on a hot row: the work was not done and may
		// succeed later, so the caller should retry, as with an outage.
		return &bourse.Error{Code: bourse.EUnavailable, Op: "sqlledger." + op, Message: "too much contention; retry", Err: err}
	}
	return fmt.Errorf("sqlledger: %s: %w", op, err)
}

// unavailable reports whether err means the database cannot be reached (as
// opposed to a query that failed, or a context that ended).
func unavailable(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	if errors.As(err, &ce) || errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case strings.HasPrefix(pe.Code, "08"): // connection exception
			return true
		case pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03": // shutdown, cannot connect now
			return true
		case pe.Code == "53300": // too many connections
			return true
		}
	}
	return false
}

// cachedCurrency returns a currency this ledger has seen committed.
func (l *Ledger) cachedCurrency(code currency.Code) (currency.Currency, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	c, ok := l.currencies[code]
	return c, ok
}

func (l *Ledger) cacheCurrency(c currency.Currency) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.currencies[c.Code] = c
}
