package market_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency/sqlledger"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/sqlstore"
	"github.com/bourse/bourse/internal/pgtest"
	"github.com/bourse/bourse/market"
	"github.com/bourse/bourse/market/markettest"
)

// openSQL opens a store on dbURL, closed when the test ends.
func openSQL(t testing.TB, dbURL string) exchange.Store {
	t.Helper()
	l, err := sqlledger.Open(context.Background(), dbURL, sqlledger.Options{})
	require.NoError(t, err)
	t.Cleanup(l.Close)
	s, err := sqlstore.Open(context.Background(), l)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

// TestMarketOnPostgreSQL trades on the SQL ledger and contract store.
func TestMarketOnPostgreSQL(t *testing.T) {
	RunMarket(t, openSQL(t, pgtest.FreshDB(t)), 4*time.Second)
}

// TestTwoExchanges runs two exchange instances in one queue group on one
// database, each with its own ledger connection pool: they share offers and
// readings with no double escrow and no double settlement.
func TestTwoExchanges(t *testing.T) {
	ctx := context.Background()
	dbURL := pgtest.FreshDB(t)
	m := markettest.Start(t, market.Config{Store: openSQL(t, dbURL), JobScale: 0.4})
	_, err := m.AddExchange(ctx, openSQL(t, dbURL))
	require.NoError(t, err)
	time.Sleep(4 * time.Second)
	m.Close()
	check(t, m.Market, openSQL(t, dbURL))
}

// check holds every contract to its server's own record (checkContracts);
// no contract is settled as lost, since every server stays up.
func check(t *testing.T, m *market.Market, store exchange.Store) {
	t.Helper()
	reasons := checkContracts(t, m, store)
	assert.Zero(t, reasons[contract.ReasonServerLost], "a contract settled as server lost while its server was up")
}

func waitNoOpenHolds(t *testing.T, store exchange.Store, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		rep, err := store.Ledger().Audit(context.Background())
		require.NoError(t, err)
		if rep.OpenHolds == 0 {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}
