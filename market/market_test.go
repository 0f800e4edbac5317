package market_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency/mem"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/memstore"
	"github.com/bourse/bourse/market"
	"github.com/bourse/bourse/market/markettest"
)

// RunMarket trades for d on store and checks the outcome: the ledger's
// audit is clean with no hold left open, and every settlement is the
// contract package's charge of its final reading.
func RunMarket(t *testing.T, store exchange.Store, d time.Duration) market.Snapshot {
	m := markettest.Start(t, market.Config{Store: store, JobScale: 0.4})
	time.Sleep(d)
	m.Close()
	snap := m.Tally.Snapshot()
	t.Logf("%d offers, %d settled, %d voided, %d countered, %d rejected, errors %v", snap.Offers, snap.SettledTotal(), snap.Voided, snap.Countered, snap.Rejected, snap.Errors)

	assert.Positive(t, snap.SettledTotal(), "the market traded")
	settled := 0
	for _, n := range checkContracts(t, m.Market, store) {
		settled += n
	}
	assert.Equal(t, snap.SettledTotal(), settled, "the bidders saw every settlement")
	return snap
}

func TestMarketInMemory(t *testing.T) {
	RunMarket(t, memstore.New(mem.New(mem.Options{})), 4*time.Second)
}

// TestNATSRestart restarts the NATS server in the middle of trading: the
// exchange, the servers and the bidders reconnect, and no usage reading is
// lost (every contract settles by its own final reading, none as server
// lost) or counted twice (every charge is that of the final reading).
func TestNATSRestart(t *testing.T) {
	store := memstore.New(mem.New(mem.Options{}))
	m := markettest.Start(t, market.Config{Store: store, JobScale: 0.5, StoreDir: t.TempDir()})
	time.Sleep(1500 * time.Millisecond)
	before := m.Tally.Snapshot()
	require.NoError(t, m.RestartNATS(500*time.Millisecond))
	time.Sleep(3 * time.Second)
	m.Close()
	after := m.Tally.Snapshot()
	t.Logf("before the restart: %d settled, %d running; at the end: %d settled, reasons %v, errors %v",
		before.SettledTotal(), before.Running, after.SettledTotal(), after.Settled, after.Errors)
	assert.Greater(t, after.SettledTotal(), before.SettledTotal()+before.Running, "trading went on after the restart")
	assert.Zero(t, after.Settled[contract.ReasonServerLost], "a reading was lost")

	reasons := checkContracts(t, m.Market, store)
	assert.Zero(t, reasons[contract.ReasonServerLost], "a reading was lost")
}
