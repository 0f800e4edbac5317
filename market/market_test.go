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
