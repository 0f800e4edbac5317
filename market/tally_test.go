package market

import (
	"context"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/bidder/strategy"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/mem"
	"github.com/bourse/bourse/exchange/memstore"
	"github.com/bourse/bourse/protocol"
)

// TestTallyRounds counts the rounds a negotiation reports as the demo
// shows them: every offer, errors by code, counter-offers taken, and the
// rounds without a contract by whether they drew counter-offers.
func TestTallyRounds(t *testing.T) {
	k := &contract.Counter{ID: "c", Server: "atlas"}
	counters := protocol.OfferReply{Counters: []contract.Counter{*k}}
	accepted := protocol.OfferReply{Contract: &protocol.ContractView{ID: "k", Client: "ada", Server: "atlas"}}
	gone := &bourse.Error{Code: bourse.ECapacityGone, Message: "gone"}
	funds := &bourse.Error{Code: bourse.EInsufficientFunds, Message: "broke"}

	tl := newTally()
	for _, r := range []strategy.Round{
		{Reply: accepted},                      // accepted
		{Reply: accepted, Took: k},             // a counter-offer taken
		{Reply: counters},                      // countered, none taken
		{Reply: counters, Took: k, Err: gone},  // countered, taken, gone
		{Reply: protocol.OfferReply{}},         // rejected outright
		{Err: funds},                           // the offer failed
		{Reply: counters, Took: k, Err: funds}, // the take failed
	} {
		tl.round("ada", r)
	}
	s := tl.Snapshot()
	assert.Equal(t, 7, s.Offers)
	assert.Equal(t, 7, s.Clients["ada"].Offers)
	assert.Equal(t, 1, s.Taken)
	assert.Equal(t, 3, s.Countered)
	assert.Equal(t, 1, s.Rejected)
	assert.Equal(t, map[bourse.Code]int{bourse.ECapacityGone: 1, bourse.EInsufficientFunds: 2}, s.Errors)
}

// TestTallyLastPrice shows a server's latest price at full use, Q
// included: P(g) + Q(g)/g per GPU-second.
func TestTallyLastPrice(t *testing.T) {
	tl := newTally()
	d := decimal.RequireFromString
	tl.opened(protocol.ContractView{ID: "k", Client: "ada", Server: "atlas", Terms: contract.Terms{
		GPUs: 2, P: contract.Flat(d("0.20")), Q: contract.Flat(d("0.10"))}})
	assert.Equal(t, "0.25", tl.Snapshot().Servers["atlas"].LastPrice.String())
}

// TestUtilisation: GPU-seconds used over the GPU-seconds a server had.
func TestUtilisation(t *testing.T) {
	s := ServerTally{GPUSeconds: decimal.NewFromInt(90)}
	assert.Equal(t, "0.375", s.Utilisation(time.Minute, 4).String(), "90 of 240 GPU-seconds")
	assert.True(t, s.Utilisation(0, 4).IsZero(), "no time yet")
	assert.True(t, s.Utilisation(time.Minute, 0).IsZero(), "no GPUs")
}

// TestTraded: a client's record from the store: every contract, and
// what the ended ones (settled or voided) charged and refunded; one
// running counts as neither.
func TestTraded(t *testing.T) {
	ctx := context.Background()
	store := memstore.New(mem.New(mem.Options{}))
	d := decimal.RequireFromString
	for _, k := range []struct {
		id             string
		state          contract.State
		charge, refund string
	}{
		{"k1", contract.StateSettled, "3.50", "6.50"},
		{"k2", contract.StateVoided, "0", "10"},
		{"k3", contract.StateRunning, "0", "0"},
	} {
		c := contract.Contract{ID: k.id, Client: "ada", Server: "atlas", State: contract.StateAccepted, Terms: contract.Terms{Client: "ada", Currency: "CRED", GPUs: 1}}
		_, _, err := store.Open(ctx, c, "")
		require.NoError(t, err)
		_, err = store.Update(ctx, k.id, func(c *contract.Contract) ([]currency.Op, error) {
			c.State, c.Charge, c.Refund = k.state, d(k.charge), d(k.refund)
			return nil, nil
		})
		require.NoError(t, err)
	}
	got, err := Traded(ctx, store, "ada")
	require.NoError(t, err)
	assert.Equal(t, 3, got.Contracts)
	assert.Equal(t, 2, got.Done)
	assert.Equal(t, "3.5", got.Spent.String())
	assert.Equal(t, "16.5", got.Refunded.String())
	none, err := Traded(ctx, store, "bob")
	require.NoError(t, err)
	assert.Zero(t, none.Contracts)
}
