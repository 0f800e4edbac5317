package mem_test

import (
	"fmt"
	"testing"

	"github.com/bourse/bourse/currency/ledgertest"
	"github.com/bourse/bourse/currency/mem"
)

// BenchmarkClients is the in-memory figure of make bench-ledger.
func BenchmarkClients(b *testing.B) {
	for _, n := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("clients=%d", n), func(b *testing.B) {
			ledgertest.BenchHoldCapture(b, mem.New(mem.Options{}), n)
		})
	}
}
