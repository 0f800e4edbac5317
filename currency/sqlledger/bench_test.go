package sqlledger

import (
	"context"
	"fmt"
	"testing"

	"github.com/bourse/bourse/currency/ledgertest"
)

// BenchmarkHoldCapture measures escrow round trips (reserve, then capture
// part and release the rest: two Apply calls), the ledger work of one
// contract, with ledgertest.BenchHoldCapture, as currency/mem's
// BenchmarkClients does: each client its own wallet, all paying one
// server's revenue account, so that every capture updates the same row.
// Compare pairs/s with pgbench's tpcb-like at the same number of clients
// (make bench-ledger does).
//
// "group" is the default, group commit; "direct" runs each Apply call in a
// transaction of its own. The clients are goroutines at the machine's
// GOMAXPROCS (-cpu N would run N threads on its cores, and Go's spinning
// locks then waste much of them).
func BenchmarkHoldCapture(b *testing.B) {
	for _, mode := range []struct {
		name string
		opts Options
	}{
		{"group", Options{}},
		{"direct", Options{GroupCommit: -1}},
	} {
		b.Run(mode.name, func(b *testing.B) {
			for _, clients := range []int{1, 8, 32} {
				b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) { benchHoldCapture(b, mode.opts, clients) })
			}
		})
	}
}

func benchHoldCapture(b *testing.B, opts Options, clients int) {
	opts.MaxConns = int32(max(4, clients))
	l, _ := openTest(b, opts)
	retries := l.retries.Load()
	ledgertest.BenchHoldCapture(b, l, clients)
	b.ReportMetric(float64(l.retries.Load()-retries)/float64(b.N), "retries/pair")
	rep, err := l.Audit(context.Background())
	if err != nil || !rep.OK() {
		b.Fatalf("audit after the benchmark: %v %s", err, rep)
	}
}
