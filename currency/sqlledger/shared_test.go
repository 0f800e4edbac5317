package sqlledger

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/currency"
)

// txFixture is a ledger with currency GPU, a wallet holding 100, and a
// table of the caller's, notes, for Ledger.Tx to write beside the ledger.
func txFixture(t *testing.T) (*Ledger, currency.AccountID) {
	l, _ := openTest(t, Options{})
	ctx := context.Background()
	require.NoError(t, l.CreateCurrency(ctx, currency.Currency{Code: "GPU", Scale: 2}))
	w, err := l.OpenAccount(ctx, currency.Account{ID: currency.WalletID("GPU", "a"), Currency: "GPU", Kind: currency.Wallet})
	require.NoError(t, err)
	_, err = l.OpenAccount(ctx, currency.Account{ID: currency.WalletID("GPU", "b"), Currency: "GPU", Kind: currency.Wallet})
	require.NoError(t, err)
	_, err = currency.Do(ctx, l, currency.Transfer{Key: "mint", From: currency.IssuanceID("GPU"), To: w.ID, Amount: decimal.NewFromInt(100)})
	require.NoError(t, err)
	_, err = l.pool.Exec(ctx, `CREATE TABLE notes (id TEXT PRIMARY KEY, n INT NOT NULL); INSERT INTO notes VALUES ('x', 0)`)
	require.NoError(t, err)
	return l, w.ID
}

func note(t *testing.T, l *Ledger, id string) (n int, found bool) {
	t.Helper()
	err := l.pool.QueryRow(context.Background(), `SELECT n FROM notes WHERE id = $1`, id).Scan(&n)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false
	}
	require.NoError(t, err)
	return n, true
}

func available(t *testing.T, l *Ledger, id currency.AccountID) string {
	t.Helper()
	b, err := l.Balance(context.Background(), id)
	require.NoError(t, err)
	return b.Available.String()
}

// A caller's read, a ledger operation and a caller's write commit together,
// in two round trips: BEGIN with the caller's read and the operation's
// reads, then the writes with COMMIT.
func TestTxCommits(t *testing.T) {
	l, w := txFixture(t)
	ctx := context.Background()
	pay := currency.Transfer{Key: "pay", From: w, To: currency.WalletID("GPU", "b"), Amount: decimal.NewFromInt(30)}
	var rs []currency.Result
	err := l.Tx(ctx, func(ctx context.Context, t *Tx) error {
		var n int
		b := &pgx.Batch{}
		b.Queue(`SELECT n FROM notes WHERE id = 'x' FOR UPDATE`).QueryRow(func(r pgx.Row) error { return r.Scan(&n) })
		if err := t.Send(ctx, b, pay); err != nil {
			return err
		}
		var err error
		if rs, err = t.Apply(ctx, pay); err != nil {
			return err
		}
		t.Queue(`UPDATE notes SET n = $1 WHERE id = 'x'`, n+1).Exec(func(ct pgconn.CommandTag) error {
			if ct.RowsAffected() != 1 {
				return errors.New("no note")
			}
			return nil
		})
		t.Queue(`INSERT INTO notes VALUES ('y', 7)`)
		return nil
	})
	require.NoError(t, err)
	require.Len(t, rs, 1)
	require.Nil(t, rs[0].Err)
	n, _ := note(t, l, "x")
	assert.Equal(t, 1, n)
	n, found := note(t, l, "y")
	assert.True(t, found)
	assert.Equal(t, 7, n)
	assert.Equal(t, "70", available(t, l, w))
	assert.Equal(t, "30", available(t, l, currency.WalletID("GPU", "b")))
	// The key is spent like any other.
	again, err := currency.Do(ctx, l, pay)
	require.NoError(t, err)
	assert.Equal(t, rs[0].Movements, again.Movements)
}

// If fn returns an error, nothing of the transaction is kept, not even the
// keys of the operations it applied, and Tx returns fn's error as it is.
func TestTxRollsBack(t *testing.T) {
	l, w := txFixture(t)
	ctx := context.Background()
	pay := currency.Transfer{Key: "pay", From: w, To: currency.WalletID("GPU", "b"), Amount: decimal.NewFromInt(30)}
	mine := &bourse.Error{Code: bourse.EConflict, Message: "changed my mind"}
	runs := 0
	err := l.Tx(ctx, func(ctx context.Context, t *Tx) error {
		runs++
		if _, err := t.Apply(ctx, pay); err != nil {
			return err
		}
		t.Queue(`UPDATE notes SET n = 5 WHERE id = 'x'`)
		if err := t.Send(ctx, nil); err != nil {
			return err
		}
		return mine
	})
	assert.Same(t, mine, err)
	assert.Equal(t, 1, runs)
	n, _ := note(t, l, "x")
	assert.Equal(t, 0, n)
	assert.Equal(t, "100", available(t, l, w))
	// The key was not spent: a different transfer under it applies.
	pay.Amount = decimal.NewFromInt(10)
	_, err = currency.Do(ctx, l, pay)
	require.NoError(t, err)
	assert.Equal(t, "90", available(t, l, w))

	// An error that is not a business error comes back as it is too.
	plain := errors.New("plain")
	assert.Same(t, plain, l.Tx(ctx, func(context.Context, *Tx) error { return plain }))
	// And a failing statement of the caller's as the database said.
	err = l.Tx(ctx, func(ctx context.Context, t *Tx) error {
		b := &pgx.Batch{}
		b.Queue(`SELECT nothing FROM notes`)
		return t.Send(ctx, b)
	})
	var pe *pgconn.PgError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "42703", pe.Code)
}

// An operation that fails for a business reason is kept under its key when
// fn commits, as a failed Apply is; the caller decides what else to write.
func TestTxKeepsFailures(t *testing.T) {
	l, w := txFixture(t)
	ctx := context.Background()
	big := currency.Transfer{Key: "big", From: w, To: currency.WalletID("GPU", "b"), Amount: decimal.NewFromInt(300)}
	err := l.Tx(ctx, func(ctx context.Context, t *Tx) error {
		rs, err := t.Apply(ctx, big)
		if err != nil {
			return err
		}
		if rs[0].Err == nil {
			return errors.New("expected a failure")
		}
		t.Queue(`INSERT INTO notes VALUES ('failed', 1)`)
		return nil
	})
	require.NoError(t, err)
	_, found := note(t, l, "failed")
	assert.True(t, found)
	rs, err := l.Apply(ctx, big)
	require.NoError(t, err)
	require.NotNil(t, rs[0].Err)
	assert.Equal(t, bourse.EInsufficientFunds, rs[0].Err.Code)
}

// TestTxRetryWriteSkew is TestRetryWriteSkew through Ledger.Tx, with the
// loser's write queued for the commit: its COMMIT batch fails with 40001,
// and Tx runs fn again, which sees the winner's write and takes nothing.
func TestTxRetryWriteSkew(t *testing.T) {
	l, winner := setupSkew(t)
	ctx := context.Background()
	k := newSkew()
	werr := make(chan error, 1)
	go func() { werr <- winner(k) }()

	runs := 0
	err := l.Tx(ctx, func(ctx context.Context, t *Tx) error {
		runs++
		var sum int
		b := &pgx.Batch{}
		b.Queue(`SELECT sum(v) FROM skew`).QueryRow(func(r pgx.Row) error { return r.Scan(&sum) })
		if err := t.Send(ctx, b); err != nil {
			return err
		}
		if runs == 1 {
			close(k.loserRead)
			<-k.winnerWrote
		}
		if sum >= 150 {
			t.Queue(`UPDATE skew SET v = v - 150 WHERE id = 2`)
		}
		if runs == 1 {
			close(k.loserWrote)
			<-k.committed
		}
		return nil
	})
	require.NoError(t, <-werr, "the winner commits")
	require.NoError(t, err, "Tx retries the loser to success")
	assert.Equal(t, 2, runs, "the loser ran twice")
	v1, v2 := skewRows(t, l)
	assert.Equal(t, -50, v1, "the winner took 150")
	assert.Equal(t, 100, v2, "the retried loser saw 50 and took nothing")
}

// Concurrent transactions on one row of the caller's, each applying an
// operation, serialize: every increment and every payment lands once.
func TestTxConcurrent(t *testing.T) {
	l, w := txFixture(t)
	ctx := context.Background()
	const n = 16
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			pay := currency.Transfer{Key: "pay" + string(rune('a'+i)), From: w, To: currency.WalletID("GPU", "b"), Amount: decimal.NewFromInt(1)}
			err := l.Tx(ctx, func(ctx context.Context, t *Tx) error {
				var v int
				b := &pgx.Batch{}
				b.Queue(`SELECT n FROM notes WHERE id = 'x' FOR UPDATE`).QueryRow(func(r pgx.Row) error { return r.Scan(&v) })
				if err := t.Send(ctx, b, pay); err != nil {
					return err
				}
				rs, err := t.Apply(ctx, pay)
				if err != nil {
					return err
				}
				if rs[0].Err != nil {
					return rs[0].Err
				}
				t.Queue(`UPDATE notes SET n = $1 WHERE id = 'x'`, v+1)
				return nil
			})
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	v, _ := note(t, l, "x")
	assert.Equal(t, n, v)
	assert.Equal(t, "84", available(t, l, w))
	t.Logf("%d transactions retried", l.retries.Load())
	rep, err := l.Audit(ctx)
	require.NoError(t, err)
	assert.True(t, rep.OK(), "%s", rep)
}

// Another package's migrations: applied once each, numbered in a scope of
// their own, beside the ledger's.
func TestMigrate(t *testing.T) {
	l, dbURL := openTest(t, Options{})
	ctx := context.Background()
	fsys := fstest.MapFS{
		"0001_first.sql": {Data: []byte(`CREATE TABLE pkg_a (id INT PRIMARY KEY)`)},
		"README":         {Data: []byte(`not a migration`)},
	}
	require.NoError(t, l.Migrate(ctx, "pkg", fsys))
	require.NoError(t, l.Migrate(ctx, "pkg", fsys), "nothing to do the second time")
	fsys["0002_second.sql"] = &fstest.MapFile{Data: []byte(`ALTER TABLE pkg_a ADD COLUMN v INT NOT NULL DEFAULT 0;
CREATE INDEX pkg_a_v ON pkg_a (v)`)}
	require.NoError(t, l.Migrate(ctx, "pkg", fsys))
	_, err := l.pool.Exec(ctx, `INSERT INTO pkg_a (id, v) VALUES (1, 2)`)
	require.NoError(t, err)

	// Another scope numbers from 1 too.
	require.NoError(t, l.Migrate(ctx, "other", fstest.MapFS{"0001_first.sql": {Data: []byte(`CREATE TABLE pkg_b (id INT PRIMARY KEY)`)}}))
	rows, err := l.pool.Query(ctx, `SELECT package || ':' || version || '_' || name FROM package_migrations ORDER BY package, version`)
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	assert.Equal(t, []string{"other:1_first", "pkg:1_first", "pkg:2_second"}, got)
	ms, err := migrations()
	require.NoError(t, err)
	assert.Len(t, appliedVersions(t, l), len(ms), "the ledger's own are apart")

	// Concurrently, from several ledgers on the database.
	fsys["0003_third.sql"] = &fstest.MapFile{Data: []byte(`CREATE TABLE pkg_c (id INT PRIMARY KEY)`)}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			other, err := Open(ctx, dbURL, Options{MaxConns: 2})
			if err != nil {
				errs[i] = err
				return
			}
			defer other.Close()
			errs[i] = other.Migrate(ctx, "pkg", fsys)
		})
	}
	wg.Wait()
	for _, err := range errs {
		assert.NoError(t, err)
	}

	// A migration that fails leaves nothing behind.
	err = l.Migrate(ctx, "bad", fstest.MapFS{
		"0001_ok.sql":     {Data: []byte(`CREATE TABLE pkg_d (id INT PRIMARY KEY)`)},
		"0002_broken.sql": {Data: []byte(`CREATE TABLE`)},
	})
	require.Error(t, err)
	var n int
	require.NoError(t, l.pool.QueryRow(ctx, `SELECT count(*) FROM package_migrations WHERE package = 'bad'`).Scan(&n))
	assert.Zero(t, n)

	assert.Error(t, l.Migrate(ctx, "pkg", fstest.MapFS{"first.sql": {Data: []byte(`SELECT 1`)}}), "misnamed")
	assert.Equal(t, bourse.EInvalid, bourse.ErrorCode(l.Migrate(ctx, "", fsys)))
}
