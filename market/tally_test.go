package market

import (
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/bidder/strategy"
	"github.com/bourse/bourse/contract"
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
