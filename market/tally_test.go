package market

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/bidder/strategy"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/trade"
)

// TestTallyRounds counts the rounds a negotiation reports as the demo
// shows them: every offer, errors by code, counter-offers taken, and the
// rounds without a contract by whether they drew counter-offers.
func TestTallyRounds(t *testing.T) {
	k := &trade.Counter{ID: "c", Server: "atlas"}
	counters := protocol.OfferReply{Counters: []trade.Counter{*k}}
	contract := protocol.OfferReply{Contract: &trade.Contract{ID: "k", Client: "ada", Server: "atlas"}}
	gone := &bourse.Error{Code: bourse.ECapacityGone, Message: "gone"}
	funds := &bourse.Error{Code: bourse.EInsufficientFunds, Message: "broke"}

	tl := newTally()
	for _, r := range []strategy.Round{
		{Reply: contract},                      // accepted
		{Reply: contract, Took: k},             // a counter-offer taken
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
