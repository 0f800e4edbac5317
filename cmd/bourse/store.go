package main

import (
	"context"
	"log/slog"
	"net/url"
	"strings"

	"github.com/bourse/bourse/currency/mem"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/memstore"
)

// openStore opens the contract store and ledger that dbURL names.
func openStore(ctx context.Context, dbURL string, log *slog.Logger) (exchange.Store, func(), error) {
	switch {
	case dbURL == "mem":
		log.Warn("using an in-memory ledger: everything is lost when this process stops")
		return memstore.New(mem.New(mem.Options{})), func() {}, nil
	case strings.HasPrefix(dbURL, "postgres://"), strings.HasPrefix(dbURL, "postgresql://"):
		return openSQLStore(ctx, dbURL, log)
	}
	return nil, nil, usagef(`--db must be a postgres:// URL (PostgreSQL or CockroachDB) or "mem", got %q`, redact(dbURL))
}

// redact hides a URL's password for logs and errors.
func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	return u.Redacted()
}
