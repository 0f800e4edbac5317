package market_test

import (
	"os"
	"testing"

	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/internal/pgtest"
)

// With BOURSE_BENCH_STORE=sql, BenchmarkOffers runs on PostgreSQL (a fresh
// database on BOURSE_TEST_DATABASE_URL's server).
func init() {
	if os.Getenv("BOURSE_BENCH_STORE") != "sql" {
		return
	}
	benchStore = func(tb testing.TB) exchange.Store { return openSQL(tb, pgtest.FreshDB(tb)) }
}
