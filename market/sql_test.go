package market_test

import (
	"cmp"
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

	"github.com/bourse/bourse/currency/sqlledger"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/sqlstore"
	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/internal/pgtest"
	"github.com/bourse/bourse/market"
	"github.com/bourse/bourse/market/markettest"
	"github.com/bourse/bourse/trade"
)

// openSQL opens a store on dbURL, closed when the test ends.
func openSQL(t testing.TB, dbURL string) exchange.Store {
	t.Helper()
	l, err := sqlledger.Open(context.Background(), dbURL, sqlledger.Options{})
	require.NoError(t, err)
	t.Cleanup(l.Close)
	s, err := sqlstore.Open(context.Background(), l)
	require.NoError(t, err)
	t.Cleanup(s.Close)
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
	m := markettest.Start(t, market.Config{Store: openSQL(t, dbURL), JobScale: 0.4})
	_, err := m.AddExchange(ctx, openSQL(t, dbURL))
	require.NoError(t, err)
	time.Sleep(4 * time.Second)
	m.Close()
	check(t, m.Market, openSQL(t, dbURL))
}

// TestExchangeCrash runs the exchange as its own process (bourse exchange)
// on PostgreSQL and an external or embedded NATS server, kills it with
// SIGKILL in the middle of a stream of offers and settlements, and starts
// it again at once: no contract is lost, no escrow leaks, nothing settles
// twice, and every contract is charged what its server says it ran. The
// process is stopped a moment before the kill, so that readings (final
// ones among them) are handed to it and never acknowledged: they must
// come back to the new process before it judges any server lost.
func TestExchangeCrash(t *testing.T) {
	faultTest(t, func(t *testing.T, ex *exchangeProcess) {
		require.NoError(t, ex.cmd.Process.Signal(syscall.SIGSTOP))
		time.Sleep(1500 * time.Millisecond)
		require.NoError(t, ex.cmd.Process.Signal(syscall.SIGKILL))
		_ = ex.cmd.Wait()
		ex.start()
	})
}

// TestExchangePause stops the exchange process with SIGSTOP for longer
// than server_lost_after while trading goes on, then lets it go on
// (SIGCONT): readings waited in the stream and the socket meanwhile, so
// the watchdog must not judge any server lost on waking, and every
// contract is charged what its server says it ran.
func TestExchangePause(t *testing.T) {
	faultTest(t, func(t *testing.T, ex *exchangeProcess) {
		require.NoError(t, ex.cmd.Process.Signal(syscall.SIGSTOP))
		time.Sleep(2 * serverLostAfter)
		require.NoError(t, ex.cmd.Process.Signal(syscall.SIGCONT))
	})
}

// serverLostAfter is the fault tests' exchange setting.
const serverLostAfter = 3 * time.Second

// exchangeProcess is a bourse exchange process of a fault test.
type exchangeProcess struct {
	t     *testing.T
	start func()
	cmd   *exec.Cmd
}

// faultTest runs a market against a bourse exchange process on
// PostgreSQL, does fault to the process in the middle of trading, trades
// on, stops, and checks every contract against its server's record.
func faultTest(t *testing.T, fault func(t *testing.T, ex *exchangeProcess)) {
	if testing.Short() {
		t.Skip("builds and runs the bourse binary")
	}
	ctx := context.Background()
	dbURL := pgtest.FreshDB(t)
	natsURL := os.Getenv("NATS_URL") // scripts/nats-server.sh: Debian's nats-server
	if natsURL == "" {
		natsURL = natstest.StartWith(t, &server.Options{StoreDir: t.TempDir()}).ClientURL()
	}
	bin := buildBourse(t)
	store := openSQL(t, dbURL) // creates the schema before the process starts
	ex := &exchangeProcess{t: t}
	ex.start = func() {
		ex.cmd = exec.Command(bin, "exchange", "--nats", natsURL, "--db", dbURL, "--metrics", "",
			"--server-lost-after", serverLostAfter.String())
		ex.cmd.Stderr = &prefixWriter{t: t}
		require.NoError(t, ex.cmd.Start())
	}
	ex.start()
	t.Cleanup(func() { _ = ex.cmd.Process.Kill(); _ = ex.cmd.Wait() })
	time.Sleep(time.Second) // its micro endpoints and consumer

	m, err := market.Start(ctx, market.Config{Store: store, JobScale: 0.5, Logger: quiet(), NATSURL: natsURL,
		External: true, ClientTimeout: 2 * time.Second})
	require.NoError(t, err)
	time.Sleep(3 * time.Second)
	before := m.Tally.Snapshot()
	fault(t, ex)
	time.Sleep(4 * time.Second)
	stopCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	m.Stop(stopCtx)
	// The market stops its own exchanges only; wait for the process's
	// last settlements, then stop it as an operator would.
	waitNoOpenHolds(t, store, 30*time.Second)
	require.NoError(t, ex.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, ex.cmd.Wait(), "a clean exit on SIGTERM")
	after := m.Tally.Snapshot()
	t.Logf("before the fault: %d settled, %d running; at the end %d settled, %d voided, reasons %v, errors %v",
		before.SettledTotal(), before.Running, after.SettledTotal(), after.Voided, after.Settled, after.Errors)
	assert.Greater(t, after.SettledTotal(), before.SettledTotal()+before.Running, "trading went on after the fault")
	check(t, m, store)
}

// check holds every contract to its server's own record (checkContracts);
// no contract is settled as lost, since every server stays up.
func check(t *testing.T, m *market.Market, store exchange.Store) {
	t.Helper()
	reasons := checkContracts(t, m, store)
	assert.Zero(t, reasons[trade.ReasonServerLost], "a contract settled as server lost while its server was up")
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
func buildBourse(t testing.TB) string {
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

// prefixWriter passes a child process's log lines to the test log, each
// after prefix ("bourse exchange" if empty).
type prefixWriter struct {
	t      *testing.T
	prefix string
}

func (w *prefixWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s: %s", cmp.Or(w.prefix, "bourse exchange"), p)
	return len(p), nil
}
