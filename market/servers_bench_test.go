package market_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/bidder"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/internal/pgtest"
	"github.com/bourse/bourse/market"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/server/agent"
)

// BenchmarkServers measures how an exchange's cost grows with the servers
// it routes to: one bourse exchange process on PostgreSQL and one
// nats-server process, N server agents (8 H100s each, the synthetic
// runner, a posted price) in this process, each on a connection of its
// own, and four clients offering one-GPU jobs of 1 ms as fast as they are
// answered. Besides contracts/s and latency it reports the exchange's and
// nats-server's CPU per offer (from /proc, while the offers ran) and how
// many servers were asked per offer: the offers the agents' policies
// decided over the offers made.
//
//	scripts/pg.sh run -- go test -run '^$' -bench BenchmarkServers -benchtime 2000x ./market
//
// BOURSE_BENCH_SERVERS lists the sizes (default 10,100,1000);
// BOURSE_BENCH_EXCHANGE_ARGS adds flags to bourse exchange.
func BenchmarkServers(b *testing.B) {
	pgtest.URL(b)
	nodes := oneNATS(b)
	bin := buildBourse(b)
	sizes := []int{10, 100, 1000}
	if v := os.Getenv("BOURSE_BENCH_SERVERS"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			require.NoError(b, err)
			sizes = append(sizes, n)
		}
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("servers=%d", n), func(b *testing.B) { benchServers(b, nodes, bin, n) })
	}
}

// oneNATS starts one nats-server process with JetStream, not in a
// cluster.
func oneNATS(b *testing.B) *natstest.Procs {
	return natstest.StartNode(b, natstest.NATSServer(b), func(port int) string {
		return fmt.Sprintf("listen: 127.0.0.1:%d\njetstream: enabled\n", port)
	})
}

// countingPolicy is a posted price that counts the offers it decides.
type countingPolicy struct {
	server.Posted
	n *atomic.Int64
}

func (c countingPolicy) Decide(offer contract.Terms, st server.View) server.Decision {
	c.n.Add(1)
	return c.Posted.Decide(offer, st)
}

// manyServers starts n server agents of 8 H100s each, each on a
// connection of its own to url, and stops them when the benchmark ends.
// Their policies count the offers they decide into asked.
func manyServers(b *testing.B, url string, n int, asked *atomic.Int64) {
	run := fmt.Sprint(time.Now().UnixNano())
	ctx, stop := context.WithCancel(context.Background())
	var agents sync.WaitGroup
	var conns []*nats.Conn
	b.Cleanup(func() {
		stop()
		agents.Wait()
		for _, nc := range conns {
			nc.Close()
		}
	})
	posted := server.Posted{P: contract.Flat(dectest.D("0.001"))}
	for i := range n {
		id := fmt.Sprintf("s%d-%s", i, run)
		nc, err := nats.Connect(url, nats.CustomInboxPrefix(protocol.InboxPrefix(id)))
		require.NoError(b, err)
		conns = append(conns, nc)
		gpus := make([]contract.GPU, 8)
		for g := range gpus {
			gpus[g] = contract.GPU{Index: g, Model: "H100", MemoryMiB: 81920}
		}
		a, err := agent.New(agent.Config{Conn: nc, ID: id, Currency: market.Currency, GPUs: gpus, Logger: quiet(),
			Policy: countingPolicy{Posted: posted, n: asked}})
		require.NoError(b, err)
		agents.Add(1)
		go func() { defer agents.Done(); _ = a.Run(ctx) }()
	}
}

// exchangeOn starts a bourse exchange process on nats and db, with the
// benchmark's extra flags, and waits until it serves.
func exchangeOn(b *testing.B, bin, natsURL, dbURL string, extra ...string) *exec.Cmd {
	metrics := freeAddr(b)
	args := append([]string{"exchange", "--nats", natsURL, "--db", dbURL, "--metrics", metrics,
		"--party-rate", "-1", "--server-reading-rate", "-1", "--client-in-flight", "1000000"}, extra...)
	args = append(args, strings.Fields(os.Getenv("BOURSE_BENCH_EXCHANGE_ARGS"))...)
	cmd := exec.Command(bin, args...)
	cmd.Stderr = io.Discard
	if f := os.Getenv("BOURSE_BENCH_EXCHANGE_LOG"); f != "" {
		log, err := os.Create(f)
		require.NoError(b, err)
		b.Cleanup(func() { log.Close() })
		cmd.Stderr = log
	}
	require.NoError(b, cmd.Start())
	b.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() })
	waitMetrics(b, metrics, time.Minute)
	return cmd
}

// fundedClients opens and funds n clients' wallets and dials them.
func fundedClients(b *testing.B, l currency.Ledger, url string, n int) []*bidder.Client {
	ctx := context.Background()
	run := fmt.Sprint(time.Now().UnixNano())
	cls := make([]*bidder.Client, n)
	for i := range cls {
		id := fmt.Sprintf("c%d-%s", i, run)
		w, err := l.OpenAccount(ctx, currency.Account{ID: currency.WalletID(market.Currency.Code, id), Currency: market.Currency.Code, Kind: currency.Wallet})
		require.NoError(b, err)
		_, err = currency.Do(ctx, l, currency.Transfer{Key: "fund/" + id, From: currency.IssuanceID(market.Currency.Code), To: w.ID, Amount: decimalMillion})
		require.NoError(b, err)
		nc, err := nats.Connect(url, nats.CustomInboxPrefix(protocol.InboxPrefix(id)))
		require.NoError(b, err)
		b.Cleanup(nc.Close)
		cls[i], err = bidder.Dial(bidder.Config{ID: id, Conn: nc})
		require.NoError(b, err)
	}
	return cls
}

func benchServers(b *testing.B, nodes *natstest.Procs, bin string, n int) {
	ctx := context.Background()
	dbURL := pgtest.FreshDB(b)
	store := openSQL(b, dbURL)
	require.NoError(b, store.Ledger().CreateCurrency(ctx, market.Currency))
	ex := exchangeOn(b, bin, nodes.URLs(0), dbURL)
	var asked atomic.Int64
	manyServers(b, nodes.URLs(0), n, &asked)
	cls := fundedClients(b, store.Ledger(), nodes.URLs(0), 4)
	waitServersKnown(b, cls[0], n)

	natsPid := nodes.Nodes[0].Pid()
	// The exchange's CPU with no offers, over a window: what n servers'
	// heartbeats and asks cost it a second whatever the offers, which
	// the offers' window below also carries.
	idle0, idleAt := cpuOf(ex.Process.Pid, false), time.Now()
	time.Sleep(idleWindow)
	idle := float64((cpuOf(ex.Process.Pid, false) - idle0).Microseconds()) / time.Since(idleAt).Seconds()
	ex0, ns0, self0, asked0 := cpuOf(ex.Process.Pid, false), cpuOf(natsPid, false), cpuOfSelf(), asked.Load()
	began := time.Now()
	runOffers(b, cls)
	took := time.Since(began)
	ex1, ns1, self1, asked1 := cpuOf(ex.Process.Pid, false), cpuOf(natsPid, false), cpuOfSelf(), asked.Load()
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.N) }
	b.ReportMetric(per(ex1-ex0), "exchange-µs/offer")
	b.ReportMetric(idle, "exchange-idle-µs/s")
	b.ReportMetric(max(0, per(ex1-ex0)-idle*took.Seconds()/float64(b.N)), "exchange-net-µs/offer")
	b.ReportMetric(per(ns1-ns0), "nats-µs/offer")
	b.ReportMetric(per(self1-self0), "agents+clients-µs/offer")
	b.ReportMetric(float64(asked1-asked0)/float64(b.N), "asked/offer")
}

// idleWindow is how long BenchmarkServers weighs the exchange's CPU
// before the offers.
const idleWindow = 5 * time.Second

// waitServersKnown waits until the exchange routes to all n servers: a
// quote for more GPUs than n-1 servers of 8 have is answered only once
// the n-th is known... which a quote cannot tell; so it waits until
// offers make contracts ten times in a row and then a second more, for
// the last hellos.
func waitServersKnown(b *testing.B, c *bidder.Client, n int) {
	waitAllKnowServers(b, c)
	time.Sleep(time.Duration(1+n/200) * time.Second)
}

// BenchmarkUsageStream measures the usage stream's messages per running
// contract per second: N server agents (8 H100s each) each run 8
// one-GPU contracts for longer than the measurement, and the stream's
// last sequence number is read before and after a window of running.
//
//	scripts/pg.sh run -- go test -run '^$' -bench BenchmarkUsageStream -benchtime 1x ./market
func BenchmarkUsageStream(b *testing.B) {
	pgtest.URL(b)
	nodes := oneNATS(b)
	bin := buildBourse(b)
	ctx := context.Background()
	const servers, perServer = 20, 8
	window := 10 * time.Second
	for range b.N {
		dbURL := pgtest.FreshDB(b)
		store := openSQL(b, dbURL)
		require.NoError(b, store.Ledger().CreateCurrency(ctx, market.Currency))
		exchangeOn(b, bin, nodes.URLs(0), dbURL)
		var asked atomic.Int64
		manyServers(b, nodes.URLs(0), servers, &asked)
		cls := fundedClients(b, store.Ledger(), nodes.URLs(0), 1)
		waitServersKnown(b, cls[0], servers)
		// Every GPU busy with a contract that outlasts the window.
		t := benchTerms()
		t.TimeLimit = 10 * time.Minute
		t.Prepayment = dectest.D("6")
		t.Job.Profile.Duration = 5 * window
		running := 0
		for i := 0; running < servers*perServer; i++ {
			r, err := cls[0].Offer(ctx, fmt.Sprint("long-", i), t)
			require.NoError(b, err)
			if r.Contract != nil {
				running++
			}
			require.Less(b, i, 4*servers*perServer, "the servers do not take the contracts")
		}
		time.Sleep(2 * time.Second) // every job started and reading
		nc, err := nats.Connect(nodes.URLs(0))
		require.NoError(b, err)
		js, err := jetstream.New(nc)
		require.NoError(b, err)
		last := func() uint64 {
			s, err := js.Stream(ctx, protocol.UsageStream)
			require.NoError(b, err)
			info, err := s.Info(ctx)
			require.NoError(b, err)
			return info.State.LastSeq
		}
		seq0, began := last(), time.Now()
		time.Sleep(window)
		seq1, took := last(), time.Since(began)
		nc.Close()
		b.ReportMetric(float64(seq1-seq0)/float64(running)/took.Seconds(), "msgs/contract/s")
		b.ReportMetric(float64(running), "contracts")
	}
	b.ReportMetric(0, "ns/op")
}
