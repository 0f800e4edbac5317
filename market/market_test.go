package market_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency/mem"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/memstore"
	"github.com/bourse/bourse/market"
	"github.com/bourse/bourse/protocol"
)

// RunMarket trades for d on store and checks the outcome: the ledger's
// audit is clean with no hold left open, and every settlement is the
// contract package's charge of its final reading.
func RunMarket(t *testing.T, store exchange.Store, d time.Duration) market.Snapshot {
	ctx := context.Background()
	m, err := market.Start(ctx, market.Config{Store: store, JobScale: 0.4, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	time.Sleep(d)
	stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	m.Stop(stopCtx)
	snap := m.Tally.Snapshot()
	t.Logf("%d offers, %d settled, %d voided, %d countered, %d rejected, errors %v", snap.Offers, snap.SettledTotal(), snap.Voided, snap.Countered, snap.Rejected, snap.Errors)

	rep, err := store.Ledger().Audit(ctx)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%s", rep)
	assert.Zero(t, rep.OpenHolds, "every contract settled or voided")
	assert.Positive(t, snap.SettledTotal(), "the market traded")

	settled := 0
	for _, c := range m.Clients {
		cs, err := store.Contracts(ctx, c.ID, 1000)
		require.NoError(t, err)
		for _, k := range cs {
			switch k.State {
			case protocol.StateSettled:
				settled++
				var u contract.Usage
				if k.Reading != nil {
					u = k.Reading.Usage()
				}
				want, err := contract.Charge(k.Terms, u, market.Currency.Scale)
				require.NoError(t, err)
				assert.True(t, want.Charge.Equal(k.Charge), "%s: charged %s, terms say %s", k.ID, k.Charge, want.Charge)
				assert.True(t, k.Charge.Add(k.Refund).Equal(k.Terms.Prepayment), "%s: charge + refund ≠ prepayment", k.ID)
			case protocol.StateVoided:
				assert.True(t, k.Refund.Equal(k.Terms.Prepayment))
			default:
				t.Errorf("contract %s left %s", k.ID, k.State)
			}
		}
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
	ctx := context.Background()
	store := memstore.New(mem.New(mem.Options{}))
	m, err := market.Start(ctx, market.Config{Store: store, JobScale: 0.5, StoreDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	time.Sleep(1500 * time.Millisecond)
	before := m.Tally.Snapshot()
	require.NoError(t, m.RestartNATS(500*time.Millisecond))
	time.Sleep(3 * time.Second)
	stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	m.Stop(stopCtx)
	after := m.Tally.Snapshot()
	t.Logf("before the restart: %d settled, %d running; at the end: %d settled, reasons %v, errors %v",
		before.SettledTotal(), before.Running, after.SettledTotal(), after.Settled, after.Errors)
	assert.Greater(t, after.SettledTotal(), before.SettledTotal()+before.Running, "trading went on after the restart")
	assert.Zero(t, after.Settled[protocol.ReasonServerLost], "a reading was lost")

	rep, err := store.Ledger().Audit(ctx)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%s", rep)
	assert.Zero(t, rep.OpenHolds)
	for _, c := range m.Clients {
		cs, err := store.Contracts(ctx, c.ID, 1000)
		require.NoError(t, err)
		for _, k := range cs {
			if k.State != protocol.StateSettled {
				continue
			}
			require.NotNil(t, k.Reading, "%s settled without a reading", k.ID)
			assert.True(t, k.Reading.Final, "%s settled on a reading that was not final", k.ID)
			want, err := contract.Charge(k.Terms, k.Reading.Usage(), market.Currency.Scale)
			require.NoError(t, err)
			assert.True(t, want.Charge.Equal(k.Charge), "%s: charged %s, final reading says %s", k.ID, k.Charge, want.Charge)
		}
	}
}
