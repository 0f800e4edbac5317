package market_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency/sqlledger"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/sqlstore"
	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/internal/pgtest"
	"github.com/bourse/bourse/market"
	"github.com/bourse/bourse/protocol"
)

// openSQL opens a store on dbURL, closed when the test ends.
func openSQL(t testing.TB, dbURL string) exchange.Store {
	t.Helper()
	l, err := sqlledger.Open(context.Background(), dbURL, sqlledger.Options{})
	require.NoError(t, err)
	t.Cleanup(l.Close)
	s, err := sqlstore.Open(context.Background(), l)
	require.NoError(t, err)
	return s
}

// TestMarketOnPostgreSQL trades on the SQL ledger and contract store.
func TestMarketOnPostgreSQL(t *testing.T) {
	RunMarket(t, openSQL(t, pgtest.FreshDB(t)), 4*time.Second)
}

// TestTwoExchanges runs two exchange instances in one queue group on one
// database, each with its own ledger connection pool: they share offers and
// readings with no double escrow and no double settlement.
func TestTwoExchanges(t *testing.T) {
	ctx := context.Background()
	dbURL := pgtest.FreshDB(t)
	m, err := market.Start(ctx, market.Config{Store: openSQL(t, dbURL), JobScale: 0.4, Logger: quiet()})
	require.NoError(t, err)
	_, err = m.AddExchange(ctx, openSQL(t, dbURL))
	require.NoError(t, err)
	time.Sleep(4 * time.Second)
	stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	m.Stop(stopCtx)
	check(t, m, openSQL(t, dbURL))
}

// TestExchangeCrash runs the exchange as its own process (bourse exchange)
// on PostgreSQL and an external or embedded NATS server, kills it with
// SIGKILL in the middle of a stream of offers and settlements, and starts
// it again: no contract is lost, no escrow leaks, nothing settles twice.
func TestExchangeCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the bourse binary")
	}
	ctx := context.Background()
	dbURL := pgtest.FreshDB(t)
	natsURL := os.Getenv("NATS_URL") // scripts/nats-server.sh: Debian's nats-server
	storeDir := ""
	if natsURL == "" {
		storeDir = t.TempDir()
		natsURL = natstest.StartWith(t, &server.Options{StoreDir: storeDir}).ClientURL()
	}
	bin := buildBourse(t)
	store := openSQL(t, dbURL) // creates the schema before the process starts
	start := func() *exec.Cmd {
		cmd := exec.Command(bin, "exchange", "--nats", natsURL, "--db", dbURL, "--metrics", "", "--server-lost-after", "5s")
		cmd.Stderr = &prefixWriter{t: t}
		require.NoError(t, cmd.Start())
		return cmd
	}
	ex := start()
	t.Cleanup(func() { _ = ex.Process.Kill(); _ = ex.Wait() })
	time.Sleep(time.Second) // its micro endpoints and consumer

	m, err := market.Start(ctx, market.Config{Store: store, JobScale: 0.5, Logger: quiet(), NATSURL: natsURL,
		External: true, ClientTimeout: 2 * time.Second})
	require.NoError(t, err)
	time.Sleep(3 * time.Second)
	before := m.Tally.Snapshot()
	require.NoError(t, ex.Process.Signal(syscall.SIGKILL))
	_ = ex.Wait()
	time.Sleep(500 * time.Millisecond)
	ex = start()
	time.Sleep(4 * time.Second)
	stopCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	m.Stop(stopCtx)
	// The market stops its own exchanges only; wait for the process's
	// last settlements, then stop it as an operator would.
	waitNoOpenHolds(t, store, 30*time.Second)
	require.NoError(t, ex.Process.Signal(syscall.SIGTERM))
	require.NoError(t, ex.Wait(), "a clean exit on SIGTERM")
	after := m.Tally.Snapshot()
	t.Logf("before the kill: %d settled, %d running; at the end %d settled, %d voided, reasons %v, errors %v",
		before.SettledTotal(), before.Running, after.SettledTotal(), after.Voided, after.Settled, after.Errors)
	assert.Greater(t, after.SettledTotal(), before.SettledTotal()+before.Running, "trading went on after the restart")
	check(t, m, store)
}

// check audits the ledger and every contract of the market's clients: all
// settled or voided, each settlement the charge of its final reading.
func check(t *testing.T, m *market.Market, store exchange.Store) {
	t.Helper()
	ctx := context.Background()
	rep, err := store.Ledger().Audit(ctx)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%s", rep)
	assert.Zero(t, rep.OpenHolds, "an escrow leaked")
	n := 0
	for _, c := range m.Clients {
		cs, err := store.Contracts(ctx, c.ID, 1000)
		require.NoError(t, err)
		for _, k := range cs {
			n++
			switch k.State {
			case protocol.StateSettled:
				var u contract.Usage
				if k.Reading != nil {
					u = k.Reading.Usage()
				}
				want, err := contract.Charge(k.Terms, u, market.Currency.Scale)
				require.NoError(t, err)
				assert.True(t, want.Charge.Equal(k.Charge), "%s: charged %s, its last reading says %s", k.ID, k.Charge, want.Charge)
			case protocol.StateVoided:
				assert.True(t, k.Refund.Equal(k.Terms.Prepayment), "%s voided without a full refund", k.ID)
			default:
				t.Errorf("contract %s left %s", k.ID, k.State)
			}
		}
	}
	assert.Positive(t, n)
	t.Logf("%s; %d contracts", rep, n)
}

func waitNoOpenHolds(t *testing.T, store exchange.Store, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		rep, err := store.Ledger().Audit(context.Background())
		require.NoError(t, err)
		if rep.OpenHolds == 0 {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// buildBourse builds the command into the test's temporary directory.
func buildBourse(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(file))
	bin := filepath.Join(t.TempDir(), "bourse")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/bourse")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// prefixWriter passes a child process's log lines to the test log.
type prefixWriter struct{ t *testing.T }

func (w *prefixWriter) Write(p []byte) (int, error) {
	w.t.Logf("bourse exchange: %s", p)
	return len(p), nil
}
