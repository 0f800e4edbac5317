package sqlledger

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/cockroachdb/cockroach-go/v2/crdb"
	crdbpgx "github.com/cockroachdb/cockroach-go/v2/crdb/crdbpgxv5"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Why two ways to retry: cockroach-go's ExecuteTx runs the transaction
// inside SAVEPOINT cockroach_restart and treats RELEASE SAVEPOINT as the
// commit, retrying after ROLLBACK TO SAVEPOINT. On CockroachDB, RELEASE of
// that savepoint does commit, and that is the efficient, correct protocol.
// On PostgreSQL, RELEASE only ends the savepoint; ExecuteTx then calls COMMIT
// and ignores its error, so a serialization failure that PostgreSQL reports
// at COMMIT (as SSI does) is swallowed and ExecuteTx returns nil for a
// transaction that was rolled back. TestCockroachGoOnPostgres shows it. So on
// PostgreSQL we retry whole transactions ourselves: BEGIN … COMMIT again from
// the top, on a connection from the pool, after a jittered backoff.

// beginSQL starts every read-write transaction.
const beginSQL = "BEGIN ISOLATION LEVEL SERIALIZABLE"

// errCommitRolledBack is COMMIT answering ROLLBACK: the transaction had
// failed already.
var errCommitRolledBack = errors.New("COMMIT rolled the transaction back")

// tx is one attempt at a transaction. Its queries go out in batches, each
// one pipelined round trip. On PostgreSQL tx drives the connection itself:
// BEGIN rides with the first batch and COMMIT with the last. On CockroachDB
// it sends its batches through the pgx.Tx that ExecuteTx began and commits.
type tx struct {
	conn      *pgx.Conn // PostgreSQL
	ptx       pgx.Tx    // CockroachDB
	begun     bool      // PostgreSQL: BEGIN has been sent
	committed bool      // commit has been called
}

// send runs the queries of b, calling their callbacks; it returns the first
// error of the database or of a callback.
func (t *tx) send(ctx context.Context, b *pgx.Batch) error {
	if b.Len() == 0 {
		return nil
	}
	if t.ptx != nil {
		return t.ptx.SendBatch(ctx, b).Close()
	}
	if !t.begun {
		b.QueuedQueries = slices.Insert(b.QueuedQueries, 0, &pgx.QueuedQuery{SQL: beginSQL})
		t.begun = true
	}
	return t.conn.SendBatch(ctx, b).Close()
}

// commit sends b (which may be nil) and commits, in the same round trip on
// PostgreSQL. A nil error means the transaction committed.
func (t *tx) commit(ctx context.Context, b *pgx.Batch) error {
	t.committed = true
	if b == nil {
		b = &pgx.Batch{}
	}
	if t.ptx != nil {
		return t.send(ctx, b) // ExecuteTx commits
	}
	if !t.begun && b.Len() == 0 {
		return nil // nothing read, nothing written
	}
	b.Queue("COMMIT").Exec(func(ct pgconn.CommandTag) error {
		if ct.String() != "COMMIT" {
			return errCommitRolledBack
		}
		return nil
	})
	return t.send(ctx, b)
}

// exec and queryRow are single queries, for tests and migrations.
func (t *tx) exec(ctx context.Context, sql string, args ...any) error {
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	return t.send(ctx, b)
}

func (t *tx) queryRow(ctx context.Context, sql string, args []any, dest ...any) error {
	b := &pgx.Batch{}
	b.Queue(sql, args...).QueryRow(func(r pgx.Row) error { return r.Scan(dest...) })
	return t.send(ctx, b)
}

// run runs fn in a SERIALIZABLE transaction, retried whole while it fails
// to serialize, at most MaxRetries times more. fn must be safe to run again:
// it starts from nothing each time. fn may commit itself (tx.commit, to
// send its last writes with COMMIT); if it returns nil without doing so, run
// commits.
func (l *Ledger) run(ctx context.Context, what string, fn func(context.Context, *tx) error) error {
	if l.crdb && l.maxRetries > 0 {
		// ExecuteTx retries 40001 itself; the loop around it catches the
		// rest of what retryable accepts.
		rctx := crdb.WithMaxRetries(ctx, l.maxRetries)
		return l.retry(ctx, what, func() error {
			return crdbpgx.ExecuteTx(rctx, l.pool, pgx.TxOptions{IsoLevel: pgx.Serializable}, func(ptx pgx.Tx) error {
				return fn(ctx, &tx{ptx: ptx})
			})
		})
	}
	return l.retry(ctx, what, func() error { return l.attempt(ctx, fn) })
}

// attempt runs fn once in a transaction of its own on PostgreSQL (or on
// CockroachDB without retries), committing or rolling back.
func (l *Ledger) attempt(ctx context.Context, fn func(context.Context, *tx) error) error {
	c, err := l.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	t := &tx{conn: c.Conn()}
	err = fn(ctx, t)
	if err == nil && !t.committed {
		err = t.commit(ctx, nil)
	}
	if conn := c.Conn(); !conn.IsClosed() && conn.PgConn().TxStatus() != 'I' {
		// Failed, or fn returned an error mid-transaction. A connection
		// that cannot roll back is closed; the pool then drops it.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		if _, rerr := conn.Exec(rctx, "ROLLBACK"); rerr != nil {
			_ = conn.Close(rctx)
		}
		cancel()
	}
	return err
}

// retry calls try until it succeeds, fails for good, or has been retried
// MaxRetries times, sleeping a jittered, growing while between tries.
func (l *Ledger) retry(ctx context.Context, what string, try func() error) error {
	for attempt := 1; ; attempt++ {
		err := try()
		if err == nil || !retryable(err) {
			return err
		}
		if attempt > l.maxRetries {
			return fmt.Errorf("gave up after %d tries: %w", attempt, err)
		}
		l.retries.Add(1)
		d := backoff(attempt)
		l.log.Debug("sqlledger: retrying transaction", "op", what, "attempt", attempt, "backoff", d, "err", err)
		timer := time.NewTimer(d) //wallclock: pacing: a retried transaction's back-off
		select {
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("%w (after %d tries; the last: %v)", ctx.Err(), attempt, err)
		case <-timer.C:
		}
	}
}

// backoff is how long to wait before retry n (from 1): between half and all
// of 1ms·2^(n-1), at most 128ms.
func backoff(n int) time.Duration {
	d := time.Millisecond << min(n-1, 7)
	return d/2 + rand.N(d/2)
}

// retryable reports whether the whole transaction may simply run again.
func retryable(err error) bool {
	var ambiguous *crdb.AmbiguousCommitError
	var exhausted *crdb.MaxRetriesExceededError
	if errors.As(err, &ambiguous) || errors.As(err, &exhausted) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "40001", // serialization_failure
			"40P01", // deadlock_detected
			// lock_not_available: a row lock waited past a lock_timeout
			// set by a caller of Tx (exchange/sqlstore's groups), which
			// may be a deadlock not found yet: run again.
			"55P03",
			// unique_violation: every insert of ours follows a read that
			// found no such row in the same transaction, so a duplicate
			// means a concurrent transaction inserted it first; run again,
			// the read finds it. (PostgreSQL reports most of these as
			// 40001 already.)
			"23505":
			return true
		}
		return false
	}
	// Nothing reached the server (a pooled connection found dead, say).
	return pgconn.SafeToRetry(err)
}
