package sqlledger

import (
	"context"
	"testing"

	"github.com/bourse/bourse/internal/pgtest"
)

// testURL and freshDB: see internal/pgtest.
func testURL(t testing.TB) string { return pgtest.URL(t) }
func freshDB(t testing.TB) string { return pgtest.FreshDB(t) }

// openTest opens a ledger on a fresh database, closed when t ends.
func openTest(t testing.TB, opts Options) (*Ledger, string) {
	t.Helper()
	dbURL := freshDB(t)
	l, err := Open(context.Background(), dbURL, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(l.Close)
	return l, dbURL
}
