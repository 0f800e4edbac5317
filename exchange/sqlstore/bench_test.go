package sqlstore_test

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/sqlledger"
)

// BenchmarkOpenSettle measures a contract's whole life in the store: Open
// (escrow and record, one transaction) then an Update that settles it with
// a Capture (one transaction). As in sqlledger's BenchmarkHoldCapture,
// which does the same ledger work without the contract rows, 64 wallets
// pay, and every capture pays the same revenue account. Store transactions
// do not share transactions by group commit: compare with its "direct"
// mode. settles/contract counts the runs of the settling change, 1 plus
// the Update's retries; gaveup/contract the contracts whose Open or Update
// ran out of retries (Options.MaxRetries), as transactions waiting for the
// revenue account's row can on PostgreSQL, where each wait ends in a
// serialization failure.
func BenchmarkOpenSettle(b *testing.B) {
	for _, clients := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			s, l, _ := openTest(b, sqlledger.Options{MaxConns: int32(max(4, clients))})
			f := setup(b, s)
			const wallets = 64
			for i := range wallets {
				f.wallet(b, fmt.Sprint("w", i))
			}
			var n, runs, gaveUp atomic.Int64
			charge := decimal.RequireFromString("3.25")
			life := func() {
				i := n.Add(1)
				id := fmt.Sprint("c", i)
				c, r := newContract(id, fmt.Sprint("w", i%wallets))
				_, _, err := s.Open(f.ctx, c, "", r)
				if err == nil {
					_, err = s.Update(f.ctx, id, func(c *contract.Contract) ([]currency.Op, error) {
						runs.Add(1)
						c.State, c.Reason, c.Charge, c.Refund = contract.StateSettled, contract.ReasonCompleted, charge, c.Terms.Prepayment.Sub(charge)
						return []currency.Op{currency.Capture{Key: "settle/" + id, Hold: currency.HoldID(id),
							To: currency.RevenueID("GPU", "srv"), Amount: charge}}, nil
					})
				}
				var pe *pgconn.PgError
				switch {
				case errors.As(err, &pe) && pe.Code == "40001":
					gaveUp.Add(1) // out of retries: see the report
				case err != nil:
					b.Error(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			if clients == 1 {
				for b.Loop() {
					life()
				}
			} else {
				procs := runtime.GOMAXPROCS(0)
				b.SetParallelism((clients + procs - 1) / procs)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						life()
					}
				})
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "contracts/s")
			b.ReportMetric(float64(runs.Load())/float64(b.N), "settles/contract")
			b.ReportMetric(float64(gaveUp.Load())/float64(b.N), "gaveup/contract")
			rep, err := l.Audit(f.ctx)
			if err != nil || !rep.OK() {
				b.Fatalf("audit after the benchmark: %v %s", err, rep)
			}
		})
	}
}
