package sqlledger

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/currency"
)

// The ledger's database is shared with packages that keep their own tables
// beside the ledger's (exchange/sqlstore keeps contracts), so that their
// rows and the money they move commit together: Ledger.Tx runs their
// statements and ledger operations in one of the ledger's transactions,
// Ledger.Send runs their reads outside one, and Ledger.Migrate (migrate.go)
// applies their schema.

// Tx runs fn in one SERIALIZABLE transaction, with the ledger's retries,
// and commits what fn did if it returns nil: the ledger operations it
// applied (Tx.Apply) and the statements it queued (Tx.Queue) go out in one
// batch with COMMIT. A transaction that reads in one batch (Tx.Send, which
// can carry the reads of the ledger operations to come) and then writes
// takes two round trips, as a plain Ledger.Apply does. Tx does not join
// group commit: each call is a transaction of its own.
//
// fn may run more than once: a transaction that fails to serialize runs
// again from the start, in a new Tx, until it commits or the retries run
// out. So fn must have no effect outside the transaction, and whatever it
// learned from one run (results, rows it read) must be set afresh by the
// next. It must not use t after returning, nor from other goroutines.
//
// If fn returns an error the transaction rolls back and Tx returns that
// error as it is (retrying it first if it is a serialization failure of a
// statement fn sent). Tx's own failures come back as Apply's do: business
// errors as they are, a database that cannot be reached as EUnavailable.
// An error from the commit means, as with Apply, that nothing was
// committed or, if the connection broke during COMMIT, that we cannot
// tell.
func (l *Ledger) Tx(ctx context.Context, fn func(ctx context.Context, t *Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var fnErr error
	err := l.run(ctx, "tx", func(ctx context.Context, t *tx) error {
		x := &Tx{s: l.newState(t)}
		if fnErr = fn(ctx, x); fnErr != nil {
			return fnErr
		}
		return x.s.flush(ctx)
	})
	switch {
	case err == nil:
		return nil
	case fnErr != nil && !retryable(fnErr) && !unavailable(fnErr):
		return fnErr // fn's, from the last run
	}
	return l.fail("tx", err)
}

// Tx is one run of a Ledger.Tx transaction.
type Tx struct {
	s *state
}

// Send runs the statements queued in b (which may be nil) in the
// transaction, in one pipelined round trip (with BEGIN, if it is the
// first), calling their callbacks. With them go the reads that ops will
// need, so that Tx.Apply of ops needs no round trip of its own: after b's
// statements, so that a caller's rows (locked with SELECT … FOR UPDATE)
// are always locked before the ledger's. Return its error from fn: a
// serialization failure is retried.
func (t *Tx) Send(ctx context.Context, b *pgx.Batch, ops ...currency.Op) error {
	all := &pgx.Batch{}
	if b != nil {
		all.QueuedQueries = append(all.QueuedQueries, b.QueuedQueries...)
	}
	loaded := t.s.queuePrefetch(all, ops)
	if err := t.s.t.send(ctx, all); err != nil {
		return err
	}
	loaded()
	return nil
}

// Apply applies ops in order, in the transaction, as Ledger.Apply does:
// the rows they need are read and locked in one round trip unless Send has
// read them, the ledger's rules decide each in memory, and their writes
// wait for the commit. An op that fails for a business reason carries
// Result.Err, and its failure is committed under its key with the rest if
// fn returns nil; to undo the transaction's other operations instead, fn
// returns an error. The returned error is the database's: return it from
// fn.
func (t *Tx) Apply(ctx context.Context, ops ...currency.Op) ([]currency.Result, error) {
	if err := t.s.prefetch(ctx, ops); err != nil {
		return nil, err
	}
	rs := make([]currency.Result, len(ops))
	for i, op := range ops {
		r, err := currency.Apply(ctx, t.s, op)
		if err != nil {
			return nil, err
		}
		rs[i] = r
	}
	return rs, nil
}

// Queue queues a statement to go out at commit, after the ledger's
// writes, in the commit's round trip. A statement that fails in the
// database rolls the transaction back. Its callback (Exec, Query,
// QueryRow), if set, runs once the whole batch has, COMMIT included: an
// error from it comes back from Ledger.Tx but cannot undo the commit, so
// use callbacks to check what can only go wrong by a bug (as the ledger
// checks that each of its writes wrote its rows), not to decide.
func (t *Tx) Queue(sql string, args ...any) *pgx.QueuedQuery {
	q := &pgx.QueuedQuery{SQL: sql, Arguments: args}
	t.s.queued = append(t.s.queued, q)
	return q
}

// Send runs the statements queued in b on a connection of the ledger's
// pool, outside any transaction of the ledger's, in one pipelined round
// trip, calling their callbacks; for reads of other packages' tables.
// Errors come back as Apply's do.
func (l *Ledger) Send(ctx context.Context, b *pgx.Batch) error {
	if err := l.poolSend(ctx, b); err != nil {
		return l.fail("send", err)
	}
	return nil
}

// Balance is account id's own balance as the transaction sees it: read
// and locked with the rows of the operations (once, if Send or Apply has
// not read it yet), then moved by each operation Apply applies. found is
// false where there is no such account.
func (t *Tx) Balance(ctx context.Context, id currency.AccountID) (balance decimal.Decimal, found bool, err error) {
	a, err := t.s.account(ctx, id)
	if err != nil || a == nil {
		return decimal.Decimal{}, false, err
	}
	return a.balance, true, nil
}

var _ currency.TxReader = (*Tx)(nil)

// Held is the sum of id's open holds as committed before this
// transaction's own operations (which the database sees only at commit):
// read it before applying any.
func (t *Tx) Held(ctx context.Context, id currency.AccountID) (decimal.Decimal, error) {
	var held string
	b := &pgx.Batch{}
	b.Queue(`SELECT COALESCE(SUM(amount), 0)::TEXT FROM holds WHERE from_uid = $1 AND status = 'open'`, accountUID(id)).
		QueryRow(func(r pgx.Row) error { return r.Scan(&held) })
	if err := t.s.t.send(ctx, b); err != nil {
		return decimal.Decimal{}, err
	}
	return parseDec(held)
}

// Net is what account has received from counterparty less what it sent
// it, as committed before this transaction's own operations: a walk of
// account's statement (its entries' primary key), so it costs in
// proportion to the account's entries.
func (t *Tx) Net(ctx context.Context, account, counterparty currency.AccountID) (decimal.Decimal, error) {
	var net string
	b := &pgx.Batch{}
	b.Queue(`SELECT COALESCE(SUM(e.amount), 0)::TEXT FROM entries e JOIN movements m ON m.uid = e.movement_uid
WHERE e.account_uid = $1 AND (m.from_account = $2 OR m.to_account = $2)`, accountUID(account), string(counterparty)).
		QueryRow(func(r pgx.Row) error { return r.Scan(&net) })
	if err := t.s.t.send(ctx, b); err != nil {
		return decimal.Decimal{}, err
	}
	return parseDec(net)
}

// Used reports whether an operation has been applied, or has failed,
// under key, in the transaction or before it.
func (t *Tx) Used(ctx context.Context, key string) (bool, error) {
	_, _, found, err := t.s.Result(ctx, key)
	return found, err
}
