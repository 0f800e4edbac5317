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
// database connections are terminated over and over; each worker retries
// its key until the ledger answers. Every exchange must then have happened
// exactly once, both legs: the balances are exact and the audit clean.
//
// The killer fires a bounded number of rounds at jittered intervals, then
// lets the workers finish: on a loaded machine a transaction can take
// longer than any fixed interval between kills, and a killer that never
// pauses would then starve every try, which tests the machine's speed,
// not the ledger.
func TestExchangeConnectionsKilled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l, dbURL := openTest(t, Options{})
	gpu, cred := exchangeBooks(t, l)
	admin, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer admin.Close(context.Background())

	stop := make(chan struct{})
	var killed int
	var killer sync.WaitGroup
	killer.Go(func() {
		for round := range 400 {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(1+round%7) * time.Millisecond):
			}
			var n int
			if admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&n) == nil {
				killed += n
			}
		}
	})
	const workers, each = 8, 10
	var wg sync.WaitGroup
	var failed atomic.Int64
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				x := currency.Convert{Key: fmt.Sprintf("x/%d/%d", w, i), From: gpu, To: cred, Amount: decimal.NewFromInt(1), Rate: decimal.RequireFromString("1.5")}
				for {
					_, err := currency.Do(ctx, l, x)
					if err == nil {
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
	close(stop)
	killer.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	t.Logf("%d connections terminated, %d tries failed", killed, failed.Load())
	require.Positive(t, killed, "the killer terminated no connection: the test tested nothing")
	require.Positive(t, failed.Load(), "no try failed: the kills never reached a transaction")
	// The pool may still hold connections killed while idle: one read
	// through each clears them out.
	for range 2 * workers {
		_, _ = l.Balance(ctx, gpu)
	}
	// 80 exchanges of 1 GPU at 1.5, each rounded down to 1 CRED.
	requireBalance(t, l, gpu, "20")
	requireBalance(t, l, cred, "80")
	requireBalance(t, l, currency.IssuanceID("CRED"), "-80")
	rep, err := l.Audit(ctx)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%s", rep)
}
