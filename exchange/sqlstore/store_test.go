package sqlstore_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/sqlledger"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/sqlstore"
	"github.com/bourse/bourse/exchange/storetest"
)

func TestConformance(t *testing.T) {
	testURL(t)
	storetest.Run(t, func(t testing.TB) exchange.Store {
		s, _, _ := openTest(t, sqlledger.Options{})
		return s
	})
}

// Opening the store again, or from several processes at once, migrates
// once and keeps the contracts.
func TestOpenAgain(t *testing.T) {
	s, l, dbURL := openTest(t, sqlledger.Options{})
	ctx := context.Background()
	f := setup(t, s)
	f.open(t, "c1")

	again, err := sqlstore.Open(ctx, l)
	require.NoError(t, err)
	_, err = again.Contract(ctx, "c1")
	require.NoError(t, err)

	const n = 4
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			l, err := sqlledger.Open(ctx, dbURL, sqlledger.Options{MaxConns: 2})
			if err != nil {
				errs[i] = err
				return
			}
			defer l.Close()
			s, err := sqlstore.Open(ctx, l)
			if err == nil {
				_, err = s.Contract(ctx, "c1")
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		assert.NoError(t, err, "process %d", i)
	}
	var versions int
	b := &pgx.Batch{}
	b.Queue(`SELECT count(*) FROM package_migrations WHERE package = 'exchange/sqlstore'`).QueryRow(func(r pgx.Row) error { return r.Scan(&versions) })
	require.NoError(t, l.Send(ctx, b))
	files, err := filepath.Glob("migrations/*.sql")
	require.NoError(t, err)
	assert.Equal(t, len(files), versions, "each migration once")
}

// The store's table on a database without it (a ledger opened, the store
// not yet): Contract says not found after Open, not "no such table".
func TestOpenMigrates(t *testing.T) {
	dbURL := freshDB(t)
	ctx := context.Background()
	l, err := sqlledger.Open(ctx, dbURL, sqlledger.Options{})
	require.NoError(t, err)
	defer l.Close()
	s, err := sqlstore.Open(ctx, l)
	require.NoError(t, err)
	_, err = s.Contract(ctx, "x")
	assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err), "%v", err)
}

// Update applies several ops atomically (memstore allows only one): if
// the second fails, the first is undone too, the contract is unchanged, and
// neither key is spent.
func TestUpdateOpsAtomic(t *testing.T) {
	s, l, _ := openTest(t, sqlledger.Options{})
	ctx := context.Background()
	f := setup(t, s)
	f.open(t, "c1")
	f.open(t, "c2")
	rev := currency.RevenueID("GPU", "srv")

	ops := []currency.Op{
		currency.Capture{Key: "settle/c1", Hold: "c1", To: rev, Amount: decimal.NewFromInt(3)},
		currency.Capture{Key: "settle/c2", Hold: "c2", To: rev, Amount: decimal.NewFromInt(11)}, // more than held
	}
	got, err := s.Update(ctx, "c1", func(c *contract.Contract) ([]currency.Op, error) {
		c.State = contract.StateSettled
		return ops, nil
	})
	assert.Equal(t, bourse.EInvalid, bourse.ErrorCode(err), "%v", err)
	assert.Equal(t, contract.StateAccepted, got.State)
	c, err := s.Contract(ctx, "c1")
	require.NoError(t, err)
	assert.Equal(t, contract.StateAccepted, c.State)
	for _, id := range []currency.HoldID{"c1", "c2"} {
		h, err := l.Hold(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, currency.HoldOpen, h.Status, "hold %s", id)
	}
	// Neither key was spent: the first capture applies now, and the
	// second, corrected, too.
	ops[1] = currency.Capture{Key: "settle/c2", Hold: "c2", To: rev, Amount: decimal.NewFromInt(4)}
	_, err = s.Update(ctx, "c1", func(c *contract.Contract) ([]currency.Op, error) {
		c.State = contract.StateSettled
		return ops, nil
	})
	require.NoError(t, err)
	b, err := l.Balance(ctx, rev)
	require.NoError(t, err)
	assert.True(t, b.Available.Equal(decimal.NewFromInt(7)), "revenue %s", b.Available)
	rep, err := l.Audit(ctx)
	require.NoError(t, err)
	assert.True(t, rep.OK(), "%s", rep)
}

// A change may not rename the contract: its row is keyed by the id.
func TestUpdateRename(t *testing.T) {
	s, _, _ := openTest(t, sqlledger.Options{})
	ctx := context.Background()
	f := setup(t, s)
	f.open(t, "c1")
	_, err := s.Update(ctx, "c1", func(c *contract.Contract) ([]currency.Op, error) {
		c.ID = "c9"
		return nil, nil
	})
	assert.Equal(t, bourse.EInternal, bourse.ErrorCode(err), "%v", err)
	_, err = s.Contract(ctx, "c9")
	assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err), "%v", err)
}

// Contracts and Stale read ranges of indexes, not the table: with
// sequential scans off (as the ledger's connections have them), a query
// that no index serves still plans one. PostgreSQL only.
func TestIndexes(t *testing.T) {
	_, l, _ := openTest(t, sqlledger.Options{})
	if l.CockroachDB() {
		t.Skip("PostgreSQL's EXPLAIN")
	}
	ctx := context.Background()
	for name, q := range map[string]string{
		"Contracts": `SELECT id, record FROM contracts WHERE client = 'a'
ORDER BY accepted_at DESC, accepted_ns DESC, id DESC LIMIT 10`,
		"Stale": `SELECT id, record FROM (
  SELECT id, record, accepted_at, accepted_ns FROM contracts
  WHERE state = 'running' AND last_seen <= now() AND (last_seen < now() OR last_seen_ns < 5)
  UNION ALL
  SELECT id, record, accepted_at, accepted_ns FROM contracts
  WHERE state = 'running' AND stop_by IS NOT NULL AND stop_by <= now() AND (stop_by < now() OR stop_ns <= 5)
    AND NOT (last_seen <= now() AND (last_seen < now() OR last_seen_ns < 5))
  UNION ALL
  SELECT id, record, accepted_at, accepted_ns FROM contracts
  WHERE state = 'accepted' AND start_deadline <= now() AND (start_deadline < now() OR start_deadline_ns < 5)
) AS stale
ORDER BY accepted_at, accepted_ns, id LIMIT 10`,
	} {
		var plan []string
		b := &pgx.Batch{}
		b.Queue("EXPLAIN " + q).Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var line string
				if err := rows.Scan(&line); err != nil {
					return err
				}
				plan = append(plan, line)
			}
			return rows.Err()
		})
		require.NoError(t, l.Send(ctx, b))
		text := strings.Join(plan, "\n")
		assert.NotContains(t, text, "Seq Scan", "%s:\n%s", name, text)
		assert.Contains(t, text, "Index", "%s:\n%s", name, text)
	}
}

// fixture is a store with currency GPU, server srv's revenue account and
// alice's wallet, funded.
type fixture struct {
	s   *sqlstore.Store
	ctx context.Context
}

func setup(t testing.TB, s *sqlstore.Store) *fixture {
	t.Helper()
	ctx := context.Background()
	l := s.Ledger()
	require.NoError(t, l.CreateCurrency(ctx, currency.Currency{Code: "GPU", Scale: 2}))
	_, err := l.OpenAccount(ctx, currency.Account{ID: currency.RevenueID("GPU", "srv"), Currency: "GPU", Kind: currency.Revenue})
	require.NoError(t, err)
	f := &fixture{s: s, ctx: ctx}
	f.wallet(t, "alice")
	return f
}

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// wallet opens client's wallet, funded.
func (f *fixture) wallet(t testing.TB, client string) {
	t.Helper()
	l := f.s.Ledger()
	id := currency.WalletID("GPU", client)
	_, err := l.OpenAccount(f.ctx, currency.Account{ID: id, Currency: "GPU", Kind: currency.Wallet})
	require.NoError(t, err)
	_, err = currency.Do(f.ctx, l, currency.Transfer{Key: "mint/" + client, From: currency.IssuanceID("GPU"),
		To: id, Amount: decimal.NewFromInt(1e9)})
	require.NoError(t, err)
}

// open opens contract id of alice.
func (f *fixture) open(t testing.TB, id string) contract.Contract {
	t.Helper()
	return f.openFor(t, id, "alice")
}

func (f *fixture) openFor(t testing.TB, id, client string) contract.Contract {
	t.Helper()
	c, r := newContract(id, client)
	stored, created, err := f.s.Open(f.ctx, c, "", r)
	require.NoError(t, err)
	require.True(t, created)
	return stored
}

func newContract(id, client string) (contract.Contract, currency.Reserve) {
	terms := contract.Terms{Client: client, Currency: "GPU", GPUs: 1, TimeLimit: time.Hour,
		Prepayment: decimal.NewFromInt(10), P: contract.Flat(decimal.RequireFromString("0.01")), Server: "srv"}
	c := contract.Contract{ID: id, Client: client, Server: "srv", Terms: terms, State: contract.StateAccepted,
		AcceptedAt: t0, StartDeadline: t0.Add(time.Minute)}
	r := currency.Reserve{Key: "escrow/" + id, Hold: currency.HoldID(id), From: currency.WalletID("GPU", client),
		Amount: terms.Prepayment, Deadline: t0.Add(2 * time.Hour)}
	return c, r
}

// A closed store refuses new calls as unavailable, which callers retry
// elsewhere, rather than hanging or writing.
func TestClosedStoreUnavailable(t *testing.T) {
	s, _, _ := openTest(t, sqlledger.Options{})
	f := setup(t, s)
	f.open(t, "c1")
	s.Close()
	_, err := s.Update(context.Background(), "c1", func(c *contract.Contract) ([]currency.Op, error) {
		c.State = contract.StateRunning
		return nil, nil
	})
	assert.Equal(t, bourse.EUnavailable, bourse.ErrorCode(err), "%v", err)
	c, err := s.Contract(context.Background(), "c1")
	require.NoError(t, err, "reads go on: the ledger is still open")
	assert.Equal(t, contract.StateAccepted, c.State, "nothing written after Close")
}

// A change whose contract row another transaction holds longer than the
// store's lock timeout (100 ms; group.go) is run again until it gets the
// row, not failed: the timeout only turns a long wait, or a deadlock
// PostgreSQL has not found yet, into a retry.
func TestLockHeldPastTheTimeout(t *testing.T) {
	s, _, dbURL := openTest(t, sqlledger.Options{})
	f := setup(t, s)
	f.open(t, "c1")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	holder, err := conn.Begin(ctx)
	require.NoError(t, err)
	_, err = holder.Exec(ctx, `SELECT record FROM contracts FOR UPDATE`)
	require.NoError(t, err)
	released := make(chan struct{})
	go func() {
		time.Sleep(400 * time.Millisecond)
		_ = holder.Rollback(ctx)
		close(released)
	}()
	got, err := s.Update(ctx, "c1", func(c *contract.Contract) ([]currency.Op, error) {
		c.State, c.StartedAt, c.LastSeen = contract.StateRunning, t0, t0
		return nil, nil
	})
	require.NoError(t, err, "a row held for 400 ms")
	assert.Equal(t, contract.StateRunning, got.State)
	<-released
}
