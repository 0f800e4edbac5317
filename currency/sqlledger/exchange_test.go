package sqlledger

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/currency"
)

// exchangeBooks opens GPU (cents) and CRED (whole units) with alice's two
// wallets, and mints her 100 GPU.
func exchangeBooks(t *testing.T, l *Ledger) (gpu, cred currency.AccountID) {
	ctx := context.Background()
	require.NoError(t, l.CreateCurrency(ctx, currency.Currency{Code: "GPU", Scale: 2}))
	require.NoError(t, l.CreateCurrency(ctx, currency.Currency{Code: "CRED", Scale: 0}))
	for _, a := range []currency.Account{
		{ID: currency.WalletID("GPU", "alice"), Currency: "GPU", Kind: currency.Wallet},
		{ID: currency.WalletID("CRED", "alice"), Currency: "CRED", Kind: currency.Wallet},
	} {
		_, err := l.OpenAccount(ctx, a)
		require.NoError(t, err)
	}
	_, err := currency.Do(ctx, l, currency.Grant("GPU", "alice", decimal.NewFromInt(100), "mint", ""))
	require.NoError(t, err)
	return currency.WalletID("GPU", "alice"), currency.WalletID("CRED", "alice")
}

func requireBalance(t *testing.T, l *Ledger, id currency.AccountID, want string) {
	t.Helper()
	b, err := l.Balance(context.Background(), id)
	require.NoError(t, err)
	require.True(t, b.Available.Equal(decimal.RequireFromString(want)), "%s: %s, want %s", id, b.Available, want)
}

// TestExchangeSecondLegFails makes the database refuse the second leg of
// an exchange (a CHECK constraint on its movement): the first leg must not
// be kept either, nor the key's result, so that the same key applies the
// whole exchange once the fault is gone.
func TestExchangeSecondLegFails(t *testing.T) {
	for _, c := range []struct {
		name string
		opts Options
	}{{"GroupCommit", Options{}}, {"NoGroupCommit", Options{GroupCommit: -1}}} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			l, dbURL := openTest(t, c.opts)
			gpu, cred := exchangeBooks(t, l)
			admin, err := pgx.Connect(ctx, dbURL)
			require.NoError(t, err)
			defer admin.Close(ctx)
			_, err = admin.Exec(ctx, `ALTER TABLE movements ADD CONSTRAINT fault_second_leg CHECK (id NOT LIKE 'x/%/in')`)
			require.NoError(t, err)

			x := currency.Convert{Key: "x1", From: gpu, To: cred, Amount: decimal.NewFromInt(10), Rate: decimal.RequireFromString("1.5")}
			_, err = l.Apply(ctx, x)
			require.Error(t, err, "the database refused the second leg")
			requireBalance(t, l, gpu, "100")
			requireBalance(t, l, cred, "0")
			requireBalance(t, l, currency.IssuanceID("GPU"), "-100")
			var results int
			require.NoError(t, admin.QueryRow(ctx, `SELECT count(*) FROM results WHERE idem_key = 'x1'`).Scan(&results))
			assert.Zero(t, results, "a failed transaction stores no result for its key")

			_, err = admin.Exec(ctx, `ALTER TABLE movements DROP CONSTRAINT fault_second_leg`)
			require.NoError(t, err)
			_, err = currency.Do(ctx, l, x)
			require.NoError(t, err)
			_, err = currency.Do(ctx, l, x)
			require.NoError(t, err, "the replay")
			requireBalance(t, l, gpu, "90")
			requireBalance(t, l, cred, "15")
			rep, err := l.Audit(ctx)
			require.NoError(t, err)
			require.True(t, rep.OK(), "%s", rep)
		})
	}
}

// TestExchangeConnectionsKilled runs 8 workers of exchanges while their
// database connections are terminated in the middle of their
// transactions; each worker retries its key until the ledger answers.
// Every exchange must then have happened exactly once, both legs: the
// balances are exact and the audit clean.
//
// The kills reach transactions by construction, not by racing the
// workers (which lost the race both ways: on a loaded machine the tries
// starved, on a quiet one the killer hit only idle connections and no
// try failed). A transaction of the killer's holds movements in SHARE
// mode. An exchange locks its rows with SELECT … FOR UPDATE in a first
// round trip, then writes both balances and inserts its movements in a
// second, which waits on that lock (while its statements are prepared on
// a new connection, or when it comes to the insert): a backend waiting on
// it is inside an exchange's transaction, nothing committed, and cannot
// leave it. That is the backend the killer terminates, and only one that
// holds a transaction id. It goes on killing what comes to wait until a worker has
// seen a try fail (with group commit a failed group is applied again call
// by call, so the kill of a group fails no call; the calls' own
// transactions come to wait in turn), then releases the lock and lets the
// workers get an exchange done before the next round.
func TestExchangeConnectionsKilled(t *testing.T) {
	for _, c := range []struct {
		name string
		opts Options
	}{{"GroupCommit", Options{}}, {"NoGroupCommit", Options{GroupCommit: -1}}} {
		t.Run(c.name, func(t *testing.T) { exchangeConnectionsKilled(t, c.opts) })
	}
}

func exchangeConnectionsKilled(t *testing.T, opts Options) {
	const workers, each, rounds = 8, 10, 10
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l, dbURL := openTest(t, opts)
	gpu, cred := exchangeBooks(t, l)
	holder, err := pgx.Connect(ctx, dbURL) // holds the lock the exchanges wait on
	require.NoError(t, err)
	defer holder.Close(context.Background())
	admin, err := pgx.Connect(ctx, dbURL) // watches and kills
	require.NoError(t, err)
	defer admin.Close(context.Background())

	var done, failed atomic.Int64
	finished := make(chan struct{}) // the workers are done
	lock := func() (pgx.Tx, error) {
		tx, err := holder.Begin(ctx)
		if err != nil {
			return nil, fmt.Errorf("begin the lock's transaction: %w", err)
		}
		if _, err := tx.Exec(ctx, `LOCK TABLE movements IN SHARE MODE`); err != nil {
			_ = tx.Rollback(ctx)
			return nil, fmt.Errorf("lock movements: %w", err)
		}
		return tx, nil
	}
	// killUntilFailed terminates the backends that wait on the holder's
	// lock until a worker's try has failed since it began (true), or the
	// workers are done (false). A backend that waits on the lock cannot
	// commit before it is terminated: each one counted is a transaction
	// killed.
	killed := map[uint32]bool{} // by pid: whether it was at its movements' insert
	killUntilFailed := func() (bool, error) {
		before := failed.Load()
		for failed.Load() == before {
			select {
			case <-finished:
				return false, nil
			default:
			}
			// Those waiting are chosen first (MATERIALIZED: no other
			// backend is ever terminated), and only in a transaction that
			// holds a transaction id: its rows locked FOR UPDATE, if not
			// written. One terminated a moment ago may still be listed,
			// and is counted once.
			rows, err := admin.Query(ctx, `WITH waiting AS MATERIALIZED (
  SELECT pid, query LIKE 'INSERT INTO movements %' AS at_insert FROM pg_stat_activity
  WHERE datname = current_database() AND $1::INT4 = ANY(pg_blocking_pids(pid)) AND backend_xid IS NOT NULL)
SELECT pid, at_insert FROM waiting WHERE pg_terminate_backend(pid)`, holder.PgConn().PID())
			if err != nil {
				return false, fmt.Errorf("kill the transactions waiting on movements: %w", err)
			}
			n := 0
			for rows.Next() {
				var pid uint32
				var atInsert bool
				if err := rows.Scan(&pid, &atInsert); err != nil {
					rows.Close()
					return false, fmt.Errorf("read the transactions killed: %w", err)
				}
				killed[pid] = killed[pid] || atInsert
				n++
			}
			if err := rows.Err(); err != nil {
				return false, fmt.Errorf("kill the transactions waiting on movements: %w", err)
			}
			if n == 0 {
				if err := sleep(ctx, time.Millisecond); err != nil {
					return false, fmt.Errorf("no try failed: %w", err)
				}
			}
		}
		return true, nil
	}
	// The first round's lock is taken before the workers start, so that
	// their first transactions come to wait on it.
	tx, err := lock()
	require.NoError(t, err)
	var killer sync.WaitGroup
	var killerErr error
	var ran int // rounds that ended with a failed try
	killer.Go(func() {
		for {
			failedOne, err := killUntilFailed()
			if rerr := tx.Rollback(ctx); err == nil && rerr != nil {
				err = fmt.Errorf("release movements: %w", rerr)
			}
			if err != nil {
				killerErr = err
				return
			}
			if !failedOne {
				return
			}
			if ran++; ran == rounds {
				return
			}
			// An exchange done between rounds: the workers are not
			// starved, whatever the machine's speed.
			for at := done.Load(); done.Load() == at; {
				select {
				case <-finished:
					return
				default:
				}
				if err := sleep(ctx, time.Millisecond); err != nil {
					killerErr = fmt.Errorf("no exchange done between rounds: %w", err)
					return
				}
			}
			if tx, err = lock(); err != nil {
				killerErr = err
				return
			}
		}
	})
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				x := currency.Convert{Key: fmt.Sprintf("x/%d/%d", w, i), From: gpu, To: cred, Amount: decimal.NewFromInt(1), Rate: decimal.RequireFromString("1.5")}
				for {
					_, err := currency.Do(ctx, l, x)
					if err == nil {
						done.Add(1)
						break
					}
					failed.Add(1)
					if ctx.Err() != nil {
						errs <- fmt.Errorf("%s: %w", x.Key, err)
						return
					}
					time.Sleep(time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	close(finished)
	killer.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, killerErr)
	atInsert := 0
	for _, w := range killed {
		if w {
			atInsert++
		}
	}
	t.Logf("%d rounds: %d transactions terminated (%d at their movements' insert), %d tries failed", ran, len(killed), atInsert, failed.Load())
	require.NotEmpty(t, killed, "no transaction was terminated: the test tested nothing")
	require.Positive(t, ran, "no round ended with a failed try")
	require.GreaterOrEqual(t, failed.Load(), int64(ran), "each round ends when a try has failed")
	// 80 exchanges of 1 GPU at 1.5, each rounded down to 1 CRED.
	requireBalance(t, l, gpu, "20")
	requireBalance(t, l, cred, "80")
	requireBalance(t, l, currency.IssuanceID("CRED"), "-80")
	rep, err := l.Audit(ctx)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%s", rep)
}

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
