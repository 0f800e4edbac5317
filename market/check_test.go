package market_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/market"
)

// checkContracts holds every contract of the market's clients to what its
// server says it ran, not merely to the reading the exchange happened to
// count (checkCharges), by the final readings the market's own servers
// made. It returns the settled contracts by reason.
func checkContracts(t *testing.T, m *market.Market, store exchange.Store) map[contract.Reason]int {
	t.Helper()
	return checkCharges(t, store, parties(m), m.Final)
}

// parties are the ids of the market's clients and wallets.
func parties(m *market.Market) []string {
	var ids []string
	for _, c := range m.Clients {
		ids = append(ids, c.ID)
	}
	for _, w := range m.Wallets {
		ids = append(ids, w.ID)
	}
	return ids
}

// checkCharges holds every contract of the parties to what its server
// says it ran: a settled contract was settled on its server's own final
// reading (final: the last reading the server made of it) and charged its
// price, a voided one refunded whole. A contract settled as server lost is
// held to the last reading its server made, whatever it says, or charged
// nothing if its server made none. The audit
// must be clean with no escrow open. It returns the settled contracts by
// reason.
func checkCharges(t *testing.T, store exchange.Store, parties []string, final func(contractID string) (contract.Reading, bool)) map[contract.Reason]int {
	t.Helper()
	ctx := context.Background()
	rep, err := store.Ledger().Audit(ctx)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%s", rep)
	assert.Zero(t, rep.OpenHolds, "an escrow leaked")
	reasons := map[contract.Reason]int{}
	n, unpaid := 0, 0
	for _, id := range parties {
		cs, err := store.Contracts(ctx, id, 0)
		require.NoError(t, err)
		for _, k := range cs {
			n++
			final, ran := final(k.ID)
			switch k.State {
			case contract.StateSettled:
				reasons[k.Reason]++
				assert.True(t, k.Charge.Add(k.Refund).Equal(k.Terms.Prepayment), "%s: charge + refund ≠ prepayment", k.ID)
				if !ran && k.Reason == contract.ReasonServerLost {
					// Lost before it said anything: nothing measured,
					// nothing charged.
					assert.True(t, k.Charge.IsZero(), "%s: lost before any reading, and charged %s", k.ID, k.Charge)
					continue
				}
				if !ran {
					t.Errorf("%s settled (%s) but its server %s never ran it", k.ID, k.Reason, k.Server)
					continue
				}
				want, err := contract.Charge(k.Terms, final.Usage(), market.Currency.Scale)
				require.NoError(t, err)
				if !assert.True(t, want.Charge.Equal(k.Charge), "%s (%s): charged %s; its server's final reading (U %s, T %v, %s) costs %s",
					k.ID, k.Reason, k.Charge, final.U, final.T, final.Reason, want.Charge) {
					continue
				}
				require.NotNil(t, k.Reading, "%s", k.ID)
				assert.Equal(t, final.Seq, k.Reading.Seq, "%s settled on another reading than its server's final one", k.ID)
				if k.Reason != contract.ReasonServerLost {
					assert.Equal(t, final.Reason, k.Reason, "%s", k.ID)
				}
			case contract.StateVoided:
				assert.True(t, k.Refund.Equal(k.Terms.Prepayment), "%s voided without a full refund", k.ID)
				if ran && final.U.IsPositive() {
					unpaid++ // the server's loss, never the client's
				}
			default:
				t.Errorf("contract %s left %s", k.ID, k.State)
			}
		}
	}
	assert.Positive(t, n)
	t.Logf("%s; %d contracts, settled %v; %d voided after their server ran them", rep, n, reasons, unpaid)
	return reasons
}
