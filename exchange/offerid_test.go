package exchange_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/housetest"
	"github.com/bourse/bourse/protocol"
)

// TestOfferIDsUnique: every negotiation has an offer id of its own,
// whatever the clock says: two instances negotiating one waiting offer
// at the same instant (its first negotiation, then another instance's
// match) once sent its server one offer id twice, from the contract id
// and the clock's nanoseconds, and the second negotiation's cancel could
// release the first's claim. And the id tells the servers asked nothing
// of the contract: not its id, not its client. gpu1 refuses without a
// counter, so its ask names no price and offers still go to it (one whose
// ask the offer does not meet is not asked at all, route.go); a quote
// asks no server.
func TestOfferIDsUnique(t *testing.T) {
	ctx := context.Background()
	h := housetest.New(t, exchange.Config{})
	refuses := &closable{}
	refuses.closed.Store(true)
	h.Server("gpu1", "H100", 1, refuses)
	h.Wallet("bob", "100")
	q := offer(t, h, "bob", "low", job(1, "0.01"), time.Hour)
	require.NotNil(t, q.Queued, "%+v", q)
	other := h.Instance()
	h.Beat(other)
	other.Match(ctx) // at the same instant: other has not heard gpu1 refuse it
	_, err := h.House.Quote(ctx, "bob", protocol.QuoteRequest{Terms: job(1, "0.01")})
	require.NoError(t, err)

	ids := h.Router.OfferIDs("gpu1")
	require.Len(t, ids, 2, "negotiated twice, and the quote asked nothing: %v", ids)
	seen := map[string]bool{}
	for _, id := range ids {
		assert.False(t, seen[id], "offer id %s sent twice: %v", id, ids)
		seen[id] = true
		assert.NotContains(t, id, q.Queued.ID, "the offer id names the contract")
		assert.False(t, strings.Contains(id, "bob"), "the offer id names the client: %s", id)
	}
}
