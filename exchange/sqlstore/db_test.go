package sqlstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bourse/bourse/currency/sqlledger"
	"github.com/bourse/bourse/exchange/sqlstore"
)

// testURL is the server the tests use: BOURSE_TEST_DATABASE_URL. Without
// it the SQL tests skip, except in CI, where they must run. (As
// currency/sqlledger's tests.)
func testURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("BOURSE_TEST_DATABASE_URL")
	if u == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("BOURSE_TEST_DATABASE_URL is not set: in CI the SQL store's tests must run (see scripts/pg.sh)")
		}
		t.Skip("BOURSE_TEST_DATABASE_URL is not set (scripts/pg.sh run -- go test … sets it)")
	}
	return u
}

// freshDB creates an empty database for t on the test server, dropped when
// t ends, and returns its URL.
func freshDB(t testing.TB) string {
	t.Helper()
	base := testURL(t)
	u, err := url.Parse(base)
	if err != nil || u.Scheme == "" {
		t.Fatalf("BOURSE_TEST_DATABASE_URL must be a URL (postgres://…): %q", base)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect to the test server: %v", err)
	}
	defer conn.Close(ctx)
	var version string
	if err := conn.QueryRow(ctx, "SELECT version()").Scan(&version); err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("bourse_test_%d_%08x", time.Now().Unix(), rand.Uint32())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	drop := "DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"
	if strings.Contains(version, "CockroachDB") {
		drop = "DROP DATABASE IF EXISTS " + name + " CASCADE"
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("drop database %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, drop); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u.Path = "/" + name
	return u.String()
}

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
	return s, l, dbURL
}
