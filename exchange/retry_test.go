package exchange_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency/sqlledger"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/housetest"
	"github.com/bourse/bourse/exchange/sqlstore"
	"github.com/bourse/bourse/internal/pgtest"
	"github.com/bourse/bourse/protocol"
)

// TestRetryAfterSettlement: an offer tried again with its request id
// answers the contract as it stands now, whichever instance the try
// reaches and whatever tries came before. A retry while the contract
// runs (its server full, so that the retry's negotiation makes nothing)
// answered the running contract, and that answer was kept for the
// minute an answer without a new contract stands; a retry after the
// settlement, within that minute, was told the contract still ran and
// had cost nothing, while the client's wallet had paid. On memory and
// on PostgreSQL, with two instances.
func TestRetryAfterSettlement(t *testing.T) {
	onStores(t, exchange.Config{}, func(t *testing.T, h *housetest.Harness, sql bool) {
		// On PostgreSQL the database's clock times the minute an answer
		// stands: the test stays within it there.
		testRetryAfterSettlement(t, h, !sql)
	})
}

// onStores runs test on a harness on the memory store, then on one on
// PostgreSQL (skipped without one, but in CI), each with cfg.
func onStores(t *testing.T, cfg exchange.Config, test func(t *testing.T, h *housetest.Harness, sql bool)) {
	t.Run("Memory", func(t *testing.T) { test(t, housetest.New(t, cfg), false) })
	t.Run("PostgreSQL", func(t *testing.T) {
		l, err := sqlledger.Open(context.Background(), pgtest.FreshDB(t), sqlledger.Options{})
		require.NoError(t, err)
		t.Cleanup(l.Close)
		s, err := sqlstore.Open(context.Background(), l)
		require.NoError(t, err)
		t.Cleanup(s.Close)
		test(t, housetest.NewOn(t, s, cfg), true)
	})
}

func testRetryAfterSettlement(t *testing.T, h *housetest.Harness, afterTheMinute bool) {
	ctx := context.Background()
	h.Server("gpu1", "H100", 1, nil)
	h.Wallet("dave", "100")
	a, b := h.House, h.Instance()
	h.Beat(b)
	tm := job(1, "0.01")
	try := func(house *exchange.House, what string) protocol.ContractView {
		t.Helper()
		reply, err := house.Offer(ctx, "dave", protocol.OfferRequest{RequestID: "r1", Terms: tm})
		require.NoError(t, err, what)
		require.NotNil(t, reply.Contract, "%s: %+v", what, reply)
		return *reply.Contract
	}

	first := try(a, "the first try")
	h.Run(10*time.Second, time.Second)
	h.Beat(b)
	for _, house := range []*exchange.House{a, b} {
		running := try(house, "a retry while it runs")
		assert.Equal(t, first.ID, running.ID)
		assert.Equal(t, contract.StateRunning, running.State, "a retry while it runs")
	}

	h.Run(time.Minute, time.Second)
	stored, err := h.Store.Contract(ctx, first.ID)
	require.NoError(t, err)
	require.Equal(t, contract.StateSettled, stored.State)
	require.True(t, stored.Charge.IsPositive())
	same := func(what string) {
		t.Helper()
		h.Beat(b)
		for i, house := range []*exchange.House{a, b} {
			got := try(house, what)
			assert.Equal(t, first.ID, got.ID, "%s, instance %d", what, i)
			assert.Equal(t, contract.StateSettled, got.State, "%s, instance %d: the contract as it stands now", what, i)
			assert.Equal(t, stored.Reason, got.Reason, "%s, instance %d", what, i)
			assert.True(t, got.Charge.Equal(stored.Charge), "%s, instance %d: charged %s, told %s", what, i, stored.Charge, got.Charge)
			assert.True(t, got.Refund.Equal(stored.Refund), "%s, instance %d", what, i)
		}
	}
	same("a retry after the settlement, within the minute")
	if afterTheMinute {
		h.Advance(2 * time.Minute)
		same("a retry after the minute")
	}
	h.Audit()
}
