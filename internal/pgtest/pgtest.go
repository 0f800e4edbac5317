// Package pgtest gives each test its own empty database on the server that
// scripts/pg.sh starts (BOURSE_TEST_DATABASE_URL), dropped when the test
// ends, so that SQL tests of several packages run in parallel.
package pgtest

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
)

// URL is the server the tests use: BOURSE_TEST_DATABASE_URL. Without
// it the SQL tests skip, except in CI, where they must run.
func URL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("BOURSE_TEST_DATABASE_URL")
	if u == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("BOURSE_TEST_DATABASE_URL is not set: in CI the SQL ledger's tests must run (see scripts/pg.sh)")
		}
		t.Skip("BOURSE_TEST_DATABASE_URL is not set (scripts/pg.sh run -- go test … sets it)")
	}
	return u
}

// FreshDB creates an empty database for t on the test server, dropped when
// t ends, and returns its URL. Tests and packages can so run in parallel.
func FreshDB(t testing.TB) string {
	t.Helper()
	base := URL(t)
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
