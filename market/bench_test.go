package market_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/bidder"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/mem"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/memstore"
	"github.com/bourse/bourse/exchange/natsvc"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/market"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/server/agent"
)

// benchStore is the store BenchmarkOffers runs on; sql_bench_test.go
// adds PostgreSQL when BOURSE_BENCH_STORE=sql.
var benchStore = func(tb testing.TB) exchange.Store { return memstore.New(mem.New(mem.Options{})) }

// BenchmarkOffers measures offers turned into escrowed contracts: clients
// make offers as fast as the exchange answers, two server agents with
// ample GPUs accept them (each job runs a moment and settles), and each
// offer's round trip is timed. It reports contracts/s and the p50 and p99
// negotiation latency. NATS is BOURSE_BENCH_NATS_URL if set (make
// bench-exchange points it at the nats-server it also runs `nats bench
// service` on), else an embedded server.
func BenchmarkOffers(b *testing.B) {
	for _, clients := range []int{1, 16} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) { benchOffers(b, clients) })
	}
}

func benchOffers(b *testing.B, clients int) {
	ctx := context.Background()
	url := os.Getenv("BOURSE_BENCH_NATS_URL")
	if url == "" {
		url = natstest.Start(b).ClientURL()
	}
	connect := func(party string, _ int) *nats.Conn {
		opts := []nats.Option{}
		if party != "" {
			opts = append(opts, nats.CustomInboxPrefix(protocol.InboxPrefix(party)))
		}
		nc, err := nats.Connect(url, opts...)
		require.NoError(b, err)
		b.Cleanup(nc.Close)
		return nc
	}
	store := benchStore(b)
	require.NoError(b, store.Ledger().CreateCurrency(ctx, market.Currency))
	// No rate limits: the benchmark is one client as fast as it can go.
	ex, err := natsvc.Start(ctx, natsvc.Config{Conn: connect("", 0), Config: exchange.Config{Store: store, Logger: quiet()},
		Limits: natsvc.Limits{Requests: -1, Readings: -1, InFlight: 1 << 20}})
	require.NoError(b, err)
	b.Cleanup(ex.Stop)
	cls := benchParties(b, store.Ledger(), clients, connect)
	for ex.LiveServers() < 2 {
		time.Sleep(10 * time.Millisecond)
	}
	runOffers(b, cls)
}

// benchParties starts the benchmarks' two server agents with 64 GPUs
// each and funds and dials clients, each connected with connect (its
// party's name, and its index among the agents or among the clients).
func benchParties(b *testing.B, l currency.Ledger, clients int, connect func(party string, i int) *nats.Conn) []*bidder.Client {
	ctx := context.Background()
	run := fmt.Sprint(time.Now().UnixNano())
	agentCtx, stopAgents := context.WithCancel(ctx)
	var agents sync.WaitGroup
	conns := []*nats.Conn{connect("bench-"+run+"-0", 0), connect("bench-"+run+"-1", 1)}
	// Registered after the agents' connections, so it runs before they
	// close: a stopping agent publishes its running jobs' final readings,
	// and on a closed connection it would retry until its shutdown timeout.
	b.Cleanup(func() { stopAgents(); agents.Wait() })
	for i, nc := range conns {
		id := fmt.Sprintf("bench-%s-%d", run, i)
		gpus := make([]contract.GPU, 64)
		for g := range gpus {
			gpus[g] = contract.GPU{Index: g, Model: "H100", MemoryMiB: 81920}
		}
		a, err := agent.New(agent.Config{Conn: nc, ID: id, Currency: market.Currency, GPUs: gpus, Logger: quiet()})
		require.NoError(b, err)
		agents.Add(1)
		go func() { defer agents.Done(); _ = a.Run(agentCtx) }()
	}
	cls := make([]*bidder.Client, clients)
	for i := range cls {
		id := fmt.Sprintf("c%d-%s", i, run)
		w, err := l.OpenAccount(ctx, currency.Account{ID: currency.WalletID(market.Currency.Code, id), Currency: market.Currency.Code, Kind: currency.Wallet})
		require.NoError(b, err)
		_, err = currency.Do(ctx, l, currency.Transfer{Key: "fund/" + id, From: currency.IssuanceID(market.Currency.Code), To: w.ID, Amount: decimalMillion})
		require.NoError(b, err)
		cls[i], err = bidder.Dial(bidder.Config{ID: id, Conn: connect(id, i)})
		require.NoError(b, err)
	}
	return cls
}

// benchTerms is the benchmarks' offer: one GPU, a job of 1 ms.
func benchTerms() contract.Terms {
	return contract.Terms{Currency: string(market.Currency.Code), GPUs: 1, TimeLimit: time.Minute,
		Prepayment: dectest.D("0.60"), P: contract.Flat(dectest.D("0.01")),
		Job: &contract.JobSpec{Profile: &contract.Profile{Utilization: dectest.D("1"), Duration: time.Millisecond}}}
}

// runOffers has the clients make b.N offers between them, as fast as they
// are answered, each of which must make a contract, and reports
// contracts/s and the p50 and p99 latency of an offer.
func runOffers(b *testing.B, cls []*bidder.Client) {
	ctx := context.Background()
	t := benchTerms()
	var next atomic.Int64
	lat := make([][]time.Duration, len(cls))
	var wg sync.WaitGroup
	errs := make(chan error, len(cls))
	b.ResetTimer()
	for c := range cls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n := next.Add(1)
				if n > int64(b.N) {
					return
				}
				began := time.Now()
				r, err := cls[c].Offer(ctx, fmt.Sprint("o", n), t)
				if err == nil && r.Contract == nil {
					err = fmt.Errorf("no contract: %+v", r)
				}
				if err != nil {
					errs <- err
					return
				}
				lat[c] = append(lat[c], time.Since(began))
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "contracts/s")
	b.ReportMetric(float64(all[len(all)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(0, "ns/op")
}

var decimalMillion = decimal.NewFromInt(1_000_000)
