package sqlledger

import (
	"context"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/internal/pgtest"
)

func TestMigrationsNamed(t *testing.T) {
	ms, err := migrations()
	require.NoError(t, err)
	require.NotEmpty(t, ms)
	for i, m := range ms {
		assert.Equal(t, i+1, m.version, "migrations are numbered 1, 2, … without gaps")
	}
}

func appliedVersions(t *testing.T, l *Ledger) []int32 {
	t.Helper()
	rows, err := l.pool.Query(context.Background(), `SELECT version FROM schema_migrations WHERE version > 0 ORDER BY version`)
	require.NoError(t, err)
	var vs []int32
	for rows.Next() {
		var v int32
		require.NoError(t, rows.Scan(&v))
		vs = append(vs, v)
	}
	require.NoError(t, rows.Err())
	return vs
}

// Opening a database twice applies nothing the second time, and the data
// stays.
func TestOpenTwice(t *testing.T) {
	l, dbURL := openTest(t, Options{})
	ctx := context.Background()
	require.NoError(t, l.CreateCurrency(ctx, currency.Currency{Code: "GPU", Scale: 2}))
	want := appliedVersions(t, l)
	l.Close()

	again, err := Open(ctx, dbURL, Options{})
	require.NoError(t, err)
	defer again.Close()
	assert.Equal(t, want, appliedVersions(t, again))
	c, err := again.Currency(ctx, "GPU")
	require.NoError(t, err)
	assert.Equal(t, int32(2), c.Scale)
}

// Processes that open a new database at once: one migrates, the others
// wait and find the work done.
func TestOpenConcurrently(t *testing.T) {
	dbURL := freshDB(t)
	ctx := context.Background()
	const n = 8
	ls := make([]*Ledger, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ls[i], errs[i] = Open(ctx, dbURL, Options{MaxConns: 2})
		}()
	}
	wg.Wait()
	var retries int64
	for i := range n {
		require.NoError(t, errs[i], "Open %d", i)
		defer ls[i].Close()
		retries += ls[i].retries.Load()
	}
	t.Logf("%d Opens at once retried %d times", n, retries)
	ms, err := migrations()
	require.NoError(t, err)
	vs := appliedVersions(t, ls[0])
	assert.Len(t, vs, len(ms), "each migration applied once")
	require.NoError(t, ls[3].CreateCurrency(ctx, currency.Currency{Code: "GPU", Scale: 2}))
	rep, err := ls[5].Audit(ctx)
	require.NoError(t, err)
	assert.True(t, rep.OK(), "%s", rep)
}

// A server that cannot be reached is EUnavailable. (No database needed.)
func TestOpenUnavailable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := Open(ctx, "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=2", Options{})
	require.Error(t, err)
	assert.Equal(t, bourse.EUnavailable, bourse.ErrorCode(err), "%v", err)

	_, err = Open(ctx, "postgres://%zz", Options{})
	assert.Equal(t, bourse.EInvalid, bourse.ErrorCode(err), "%v", err)
}

// After the server goes away, calls fail with EUnavailable. The ledger
// talks to the server through a proxy on the loopback, which the test then
// shuts.
func TestUnavailableAfterOpen(t *testing.T) {
	dbURL := freshDB(t)
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	p := pgtest.NewProxy(t, u.Host)
	ctx := context.Background()
	l, err := Open(ctx, p.Through(t, dbURL)+"&connect_timeout=2", Options{MaxRetries: 3})
	require.NoError(t, err)
	defer l.Close()
	require.NoError(t, l.CreateCurrency(ctx, currency.Currency{Code: "GPU", Scale: 2}))

	p.Cut()
	_, err = l.Currency(ctx, "EUR")
	assert.Equal(t, bourse.EUnavailable, bourse.ErrorCode(err), "%v", err)
	_, err = l.Apply(ctx, currency.Transfer{Key: "k", From: currency.IssuanceID("GPU"), To: "wallet/GPU/a", Amount: decimal.NewFromInt(1)})
	assert.Equal(t, bourse.EUnavailable, bourse.ErrorCode(err), "%v", err)
	_, err = l.Balance(ctx, currency.IssuanceID("GPU"))
	assert.Equal(t, bourse.EUnavailable, bourse.ErrorCode(err), "%v", err)
}
