package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/bourse/bourse/currency/sqlledger"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/sqlstore"
)

// openSQLStore opens the ledger on PostgreSQL or CockroachDB (the driver
// tells them apart) and the contract store beside it, applying both
// packages' migrations.
func openSQLStore(ctx context.Context, dbURL string, log *slog.Logger) (exchange.Store, func(), error) {
	l, err := sqlledger.Open(ctx, dbURL, sqlledger.Options{Logger: log})
	if err != nil {
		return nil, nil, fmt.Errorf("open ledger at %s: %w", redact(dbURL), err)
	}
	s, err := sqlstore.Open(ctx, l)
	if err != nil {
		l.Close()
		return nil, nil, fmt.Errorf("open contract store at %s: %w", redact(dbURL), err)
	}
	db := "PostgreSQL"
	if l.CockroachDB() {
		db = "CockroachDB"
	}
	log.Debug("ledger opened", "database", db, "url", redact(dbURL))
	return s, func() { s.Close(); l.Close() }, nil
}
