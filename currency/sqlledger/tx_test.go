package sqlledger

import (
	"context"
	"errors"
	"testing"

	crdbpgx "github.com/cockroachdb/cockroach-go/v2/crdb/crdbpgxv5"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A write skew that PostgreSQL's SSI can only catch at COMMIT: two
// transactions each read both rows of skew and, if together they hold at
// least 150, take 150 from their own row. Run one after the other, the
// second sees 50 and takes nothing; run interleaved, both would take, and
// the rows would sum to -100. The interleaving:
//
//	loser:  BEGIN; SELECT sum            (reads both rows)
//	winner: BEGIN; SELECT sum; UPDATE row 1
//	loser:  UPDATE row 2                 (no error yet: nobody committed)
//	winner: COMMIT                       (succeeds, and dooms the loser)
//	loser:  COMMIT                       → 40001
//
// setupSkew makes the table and returns the winner, which plays its part
// in step with the loser through the channels of a skew.
func setupSkew(t *testing.T) (l *Ledger, winner func(*skew) error) {
	if testing.Short() {
		t.Skip("uses the database")
	}
	l, _ = openTest(t, Options{})
	ctx := context.Background()
	if l.crdb {
		t.Skip("PostgreSQL's SSI; CockroachDB serializes differently")
	}
	_, err := l.pool.Exec(ctx, `CREATE TABLE skew (id INT PRIMARY KEY, v INT NOT NULL);
INSERT INTO skew VALUES (1, 100), (2, 100)`)
	require.NoError(t, err)
	winner = func(k *skew) error {
		defer close(k.committed)
		<-k.loserRead
		return pgx.BeginTxFunc(ctx, l.pool, pgx.TxOptions{IsoLevel: pgx.Serializable}, func(tx pgx.Tx) error {
			var sum int
			if err := tx.QueryRow(ctx, `SELECT sum(v) FROM skew`).Scan(&sum); err != nil {
				return err
			}
			if sum >= 150 {
				if _, err := tx.Exec(ctx, `UPDATE skew SET v = v - 150 WHERE id = 1`); err != nil {
					return err
				}
			}
			close(k.winnerWrote)
			<-k.loserWrote
			return nil
		})
	}
	return l, winner
}

// skew orders the steps of the winner and the loser.
type skew struct {
	loserRead, winnerWrote, loserWrote, committed chan struct{}
}

func newSkew() *skew {
	return &skew{make(chan struct{}), make(chan struct{}), make(chan struct{}), make(chan struct{})}
}

func skewRows(t *testing.T, l *Ledger) (v1, v2 int) {
	t.Helper()
	require.NoError(t, l.pool.QueryRow(context.Background(), `SELECT
  (SELECT v FROM skew WHERE id = 1), (SELECT v FROM skew WHERE id = 2)`).Scan(&v1, &v2))
	return v1, v2
}

// TestRetryWriteSkew runs the loser through Ledger.run: its COMMIT fails,
// run starts it again from BEGIN, and the second try sees the winner's
// write and takes nothing.
func TestRetryWriteSkew(t *testing.T) {
	l, winner := setupSkew(t)
	ctx := context.Background()
	k := newSkew()
	werr := make(chan error, 1)
	go func() { werr <- winner(k) }()

	attempts := 0
	var firstFnErr error
	err := l.run(ctx, "skew", func(ctx context.Context, t *tx) error {
		attempts++
		var sum int
		if err := t.queryRow(ctx, `SELECT sum(v) FROM skew`, nil, &sum); err != nil {
			return err
		}
		if attempts == 1 {
			close(k.loserRead)
			<-k.winnerWrote
		}
		if sum >= 150 {
			if err := t.exec(ctx, `UPDATE skew SET v = v - 150 WHERE id = 2`); err != nil {
				if attempts == 1 {
					firstFnErr = err
				}
				return err
			}
		}
		if attempts == 1 {
			close(k.loserWrote)
			<-k.committed
		}
		return nil
	})
	require.NoError(t, <-werr, "the winner commits")
	require.NoError(t, err, "run retries the loser to success")
	require.NoError(t, firstFnErr, "the first try's statements all succeeded: it failed at COMMIT")
	assert.Equal(t, 2, attempts, "the loser ran twice")
	assert.EqualValues(t, 1, l.retries.Load())
	v1, v2 := skewRows(t, l)
	assert.Equal(t, -50, v1, "the winner took 150")
	assert.Equal(t, 100, v2, "the retried loser saw 50 and took nothing")
	assert.GreaterOrEqual(t, v1+v2, 0, "the invariant")
}

// TestCockroachGoOnPostgres shows why we do not use cockroach-go on
// PostgreSQL: the same loser through crdbpgx.ExecuteTx. Its RELEASE
// SAVEPOINT succeeds, its COMMIT fails with 40001, and ExecuteTx, which
// takes RELEASE for the commit, ignores that error: it reports success for
// a transaction whose write is gone.
func TestCockroachGoOnPostgres(t *testing.T) {
	l, winner := setupSkew(t)
	ctx := context.Background()
	k := newSkew()
	werr := make(chan error, 1)
	go func() { werr <- winner(k) }()

	attempts := 0
	err := crdbpgx.ExecuteTx(ctx, l.pool, pgx.TxOptions{IsoLevel: pgx.Serializable}, func(tx pgx.Tx) error {
		attempts++
		var sum int
		if err := tx.QueryRow(ctx, `SELECT sum(v) FROM skew`).Scan(&sum); err != nil {
			return err
		}
		if attempts == 1 {
			close(k.loserRead)
			<-k.winnerWrote
		}
		if sum >= 150 {
			if _, err := tx.Exec(ctx, `UPDATE skew SET v = v - 150 WHERE id = 2`); err != nil {
				return err
			}
		}
		if attempts == 1 {
			close(k.loserWrote)
			<-k.committed
		}
		return nil
	})
	require.NoError(t, <-werr, "the winner commits")
	assert.NoError(t, err, "ExecuteTx reports success…")
	assert.Equal(t, 1, attempts, "…after one try…")
	v1, v2 := skewRows(t, l)
	assert.Equal(t, -50, v1)
	assert.Equal(t, 100, v2, "…but the loser's UPDATE was rolled back")
}

// TestRetryGivesUp: a transaction that always fails to serialize is tried
// 1 + MaxRetries times, and the error says why.
func TestRetryGivesUp(t *testing.T) {
	l, _ := openTest(t, Options{MaxRetries: 3})
	attempts := 0
	err := l.run(context.Background(), "doomed", func(ctx context.Context, t *tx) error {
		attempts++
		if err := t.exec(ctx, `SELECT 1`); err != nil {
			return err
		}
		return &pgconn.PgError{Code: "40001", Message: "could not serialize (test)"}
	})
	assert.Equal(t, 4, attempts)
	var pe *pgconn.PgError
	require.True(t, errors.As(err, &pe), "%v", err)
	assert.Equal(t, "40001", pe.Code)
}

// TestRetryDeadlock: two transactions lock the same two rows in opposite
// orders; PostgreSQL aborts one with 40P01 and run retries it.
func TestRetryDeadlock(t *testing.T) {
	l, _ := openTest(t, Options{})
	if l.crdb {
		t.Skip("CockroachDB reports deadlocks as 40001")
	}
	ctx := context.Background()
	_, err := l.pool.Exec(ctx, `CREATE TABLE dl (id INT PRIMARY KEY, v INT NOT NULL); INSERT INTO dl VALUES (1, 0), (2, 0)`)
	require.NoError(t, err)
	locked := [2]chan struct{}{make(chan struct{}), make(chan struct{})}
	attempts := [2]int{}
	errs := make(chan error, 2)
	for i := range 2 {
		first, second := i+1, 2-i
		go func() {
			errs <- l.run(ctx, "deadlock", func(ctx context.Context, t *tx) error {
				attempts[i]++
				if err := t.exec(ctx, `UPDATE dl SET v = v + 1 WHERE id = $1`, first); err != nil {
					return err
				}
				if attempts[i] == 1 {
					close(locked[i])
					<-locked[1-i]
				}
				return t.exec(ctx, `UPDATE dl SET v = v + 1 WHERE id = $1`, second)
			})
		}()
	}
	require.NoError(t, <-errs)
	require.NoError(t, <-errs)
	assert.GreaterOrEqual(t, attempts[0]+attempts[1], 3, "one of the two ran again")
	var sum int
	require.NoError(t, l.pool.QueryRow(ctx, `SELECT sum(v) FROM dl`).Scan(&sum))
	assert.Equal(t, 4, sum, "both transactions committed, once each")
}
