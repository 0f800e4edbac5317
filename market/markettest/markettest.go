// Package markettest starts a whole market (market.Start) for a test: the
// one set-up that the tests of the bidder, of bourse bid and bourse
// server, of the example agent and of the market itself share, so that a
// change to what starting a market takes is made once.
package markettest

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/mem"
	"github.com/bourse/bourse/exchange/memstore"
	"github.com/bourse/bourse/market"
	"github.com/bourse/bourse/scenario"
	"github.com/bourse/bourse/server"
)

// StopWithin bounds how long closing a market waits for its bidders to
// stop and its contracts to settle.
const StopWithin = 30 * time.Second

// Market is a market started for a test, with the ledger of its store.
type Market struct {
	*market.Market
	Ledger currency.Ledger

	t    testing.TB
	once sync.Once
}

// Start starts a market of cfg: on a fresh in-memory store if cfg.Store is
// nil, logging nowhere if cfg.Logger is nil. It is closed when the test
// ends, if the test has not closed it.
func Start(t testing.TB, cfg market.Config) *Market {
	t.Helper()
	if cfg.Store == nil {
		cfg.Store = memstore.New(mem.New(mem.Options{}))
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	mk, err := market.Start(context.Background(), cfg)
	require.NoError(t, err)
	m := &Market{Market: mk, Ledger: cfg.Store.Ledger(), t: t}
	t.Cleanup(m.Close)
	return m
}

// Close stops the market (market.Market.Stop, within StopWithin) the first
// time it is called; a test calls it to look at what the market did once
// its contracts have settled.
func (m *Market) Close() {
	m.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), StopWithin)
		defer cancel()
		m.Stop(ctx)
	})
}

// Fund opens a wallet in cur for each client id and grants it amount
// (under the key grant/<id>).
func (m *Market) Fund(cur currency.Code, amount decimal.Decimal, ids ...string) {
	m.t.Helper()
	ctx := context.Background()
	for _, id := range ids {
		w, err := m.Ledger.OpenAccount(ctx, currency.Account{ID: currency.WalletID(cur, id), Currency: cur, Kind: currency.Wallet})
		require.NoError(m.t, err)
		_, err = currency.Do(ctx, m.Ledger, currency.Transfer{Key: "grant/" + id, From: currency.IssuanceID(cur), To: w.ID, Amount: amount})
		require.NoError(m.t, err)
	}
}

// PostedH100s is a server of count H100s (80 GiB) that accepts any offer
// paying at least price per GPU-second (server.Posted).
func PostedH100s(id string, count int, price decimal.Decimal) scenario.ServerSpec {
	return scenario.ServerSpec{ID: id, Model: "H100", MemoryMiB: 81920, Count: count,
		Policy: server.Posted{P: contract.Flat(price)}}
}
