package sqlstore_test

import (
	"context"
	"testing"

	"github.com/bourse/bourse/currency/sqlledger"
	"github.com/bourse/bourse/exchange/sqlstore"
	"github.com/bourse/bourse/internal/pgtest"
)

// testURL and freshDB: see internal/pgtest.
func testURL(t testing.TB) string { return pgtest.URL(t) }
func freshDB(t testing.TB) string { return pgtest.FreshDB(t) }

// openTest opens a ledger on a fresh database and a store on it, closed
// when t ends.
func openTest(t testing.TB, opts sqlledger.Options) (*sqlstore.Store, *sqlledger.Ledger, string) {
	t.Helper()
	dbURL := freshDB(t)
	l, err := sqlledger.Open(context.Background(), dbURL, opts)
	if err != nil {
		t.Fatalf("sqlledger.Open: %v", err)
	}
	t.Cleanup(l.Close)
	s, err := sqlstore.Open(context.Background(), l)
	if err != nil {
		t.Fatalf("sqlstore.Open: %v", err)
	}
	t.Cleanup(s.Close)
	return s, l, dbURL
}
