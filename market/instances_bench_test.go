package market_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/bidder"
	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/internal/pgtest"
	"github.com/bourse/bourse/market"
	"github.com/bourse/bourse/protocol"
)

// BenchmarkInstances is BenchmarkOffers on the cluster of TestCluster:
// 1, 2 and 3 bourse exchange processes on one PostgreSQL and one NATS
// cluster of three nodes (the usage stream replicated three times), the
// two server agents and the clients in this process, each party on a
// node of its own. Beside contracts/s and latency it reports the CPU that
// each part spent per contract while the offers ran: the exchanges
// together, the NATS nodes together, PostgreSQL (its postmaster and
// backends, PG_POSTMASTER_PID from scripts/pg.sh) and this process (the
// agents and clients). On two cores more instances cannot make more
// contracts; what the CPU per contract shows is what several instances
// cost over one. Run with -benchtime Nx: each run starts its exchanges.
func BenchmarkInstances(b *testing.B) {
	pgtest.URL(b)
	nodes := natstest.StartProcs(b, 3)
	bin := buildBourse(b)
	clients := 16
	if v, err := strconv.Atoi(os.Getenv("BOURSE_BENCH_CLIENTS")); err == nil && v > 0 {
		clients = v
	}
	for _, n := range []int{1, 2, 3} {
		b.Run(fmt.Sprintf("instances=%d", n), func(b *testing.B) { benchInstances(b, nodes, bin, n, clients) })
	}
}

func benchInstances(b *testing.B, nodes *natstest.Procs, bin string, instances, clients int) {
	ctx := context.Background()
	dbURL := pgtest.FreshDB(b)
	store := openSQL(b, dbURL)
	require.NoError(b, store.Ledger().CreateCurrency(ctx, market.Currency))
	var exchanges []*exec.Cmd
	for i := range instances {
		metrics := freeAddr(b)
		// No limits: the clients go as fast as they are answered.
		cmd := exec.Command(bin, "exchange", "--nats", nodes.URLs(i), "--db", dbURL, "--stream-replicas", strconv.Itoa(len(nodes.Nodes)),
			"--metrics", metrics, "--party-rate", "-1", "--server-reading-rate", "-1", "--client-in-flight", "1000000")
		cmd.Stderr = io.Discard
		cmd.Args = append(cmd.Args, strings.Fields(os.Getenv("BOURSE_BENCH_EXCHANGE_ARGS"))...)
		require.NoError(b, cmd.Start())
		b.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() })
		waitMetrics(b, metrics, time.Minute)
		exchanges = append(exchanges, cmd)
	}
	connect := func(party string, i int) *nats.Conn {
		nc, err := nats.Connect(nodes.URLs(i%3), nats.DontRandomize(), nats.MaxReconnects(-1),
			nats.CustomInboxPrefix(protocol.InboxPrefix(party)))
		require.NoError(b, err)
		b.Cleanup(nc.Close)
		return nc
	}
	cls := benchParties(b, store.Ledger(), clients, connect)
	waitAllKnowServers(b, cls[0])

	var pids []int
	for _, n := range nodes.Nodes {
		pids = append(pids, n.Pid())
	}
	pg, _ := strconv.Atoi(os.Getenv("PG_POSTMASTER_PID"))
	cpu := func() (self, ex, ns, db time.Duration) {
		for _, c := range exchanges {
			ex += cpuOf(c.Process.Pid, false)
		}
		for _, p := range pids {
			ns += cpuOf(p, false)
		}
		if pg > 0 {
			db = cpuOf(pg, true)
		}
		return cpuOfSelf(), ex, ns, db
	}
	self0, ex0, ns0, db0 := cpu()
	rolled0, locked0 := rollbacks(b, dbURL)
	runOffers(b, cls)
	self1, ex1, ns1, db1 := cpu()
	rolled1, locked1 := rollbacks(b, dbURL)
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.N) }
	b.ReportMetric(per(ex1-ex0), "exchanges-µs/contract")
	b.ReportMetric(per(ns1-ns0), "nats-µs/contract")
	b.ReportMetric(per(db1-db0), "postgres-µs/contract")
	b.ReportMetric(per(self1-self0), "clients+agents-µs/contract")
	b.ReportMetric(per(self1-self0+ex1-ex0+ns1-ns0+db1-db0), "all-µs/contract")
	// Transactions PostgreSQL rolled back: the instances' groups that
	// failed to serialize against one another's, or deadlocked with one,
	// and were run again.
	b.ReportMetric(float64(rolled1-rolled0)/float64(b.N), "rollbacks/contract")
	b.ReportMetric(float64(locked1-locked0), "deadlocks")
}

// BenchmarkCluster is BenchmarkInstances' load on one exchange process,
// on a NATS cluster of three nodes (the usage stream replicated three
// times) against one NATS node, in one run: what the cluster costs a
// contract, in CPU of every process, over a lone node.
//
//	scripts/pg.sh run -- env GOGC=400 go test -run '^$' -bench BenchmarkCluster -benchtime 5000x ./market
func BenchmarkCluster(b *testing.B) {
	pgtest.URL(b)
	bin := buildBourse(b)
	clients := 16
	if v, err := strconv.Atoi(os.Getenv("BOURSE_BENCH_CLIENTS")); err == nil && v > 0 {
		clients = v
	}
	b.Run("nodes=1", func(b *testing.B) { benchInstances(b, oneNATS(b), bin, 1, clients) })
	b.Run("nodes=3", func(b *testing.B) { benchInstances(b, natstest.StartProcs(b, 3), bin, 1, clients) })
}

// rollbacks is how many transactions the benchmark's database has rolled
// back, and how many deadlocks it found (pg_stat_database, flushed).
func rollbacks(b *testing.B, dbURL string) (rolled, deadlocks int64) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(b, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "SELECT pg_stat_force_next_flush()")
	require.NoError(b, err)
	require.NoError(b, conn.QueryRow(ctx, "SELECT xact_rollback, deadlocks FROM pg_stat_database WHERE datname = current_database()").Scan(&rolled, &deadlocks))
	return rolled, deadlocks
}

// waitAllKnowServers waits until both agents are known to every
// instance: offers from a client go to instances at random, so ten in a
// row that make contracts mean that all of them route to the servers.
func waitAllKnowServers(b *testing.B, c *bidder.Client) {
	deadline := time.Now().Add(time.Minute)
	ok := 0
	for n := 0; ok < 10; n++ {
		if time.Now().After(deadline) {
			b.Fatal("the exchanges do not route to the servers within a minute")
		}
		r, err := c.Offer(context.Background(), fmt.Sprint("warm-", n), benchTerms())
		if err == nil && r.Contract != nil {
			ok++
		} else {
			ok = 0
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// waitMetrics waits until an exchange serves its metrics at addr, which
// it does once it has the usage stream and its consumer and takes
// requests.
func waitMetrics(tb testing.TB, addr string, within time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if resp, err := http.Get("http://" + addr + "/metrics"); err == nil {
			resp.Body.Close()
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	tb.Fatalf("the exchange at %s does not serve within %v", addr, within)
}
