package exchange_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/housetest"
	"github.com/bourse/bourse/protocol"
)

// TestNoServerYet: an exchange that has heard from no server says so,
// rather than suggesting other terms that would fare no better; one that
// has says which of the terms no server meets. Models match without
// case, as on the servers.
func TestNoServerYet(t *testing.T) {
	ctx := context.Background()
	h := housetest.New(t, exchange.Config{})
	h.Wallet("erin", "100")
	_, err := h.House.Offer(ctx, "erin", protocol.OfferRequest{RequestID: "early", Terms: job(1, "0.01")})
	var e *bourse.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, bourse.ENoMatch, e.Code)
	assert.Contains(t, e.Message, "no server has registered")
	assert.Empty(t, e.Field, "not a matter of the terms")

	h.Server("gpu1", "H100", 1, nil)
	_, err = h.House.Offer(ctx, "erin", protocol.OfferRequest{RequestID: "too-big", Terms: job(2, "0.01")})
	require.ErrorAs(t, err, &e)
	assert.Equal(t, bourse.ENoMatch, e.Code)
	assert.Equal(t, "terms.gpus", e.Field)

	tm := job(1, "0.01")
	tm.Class.Model = "h100"
	reply := offer(t, h, "erin", "lower-case", tm, 0)
	require.NotNil(t, reply.Contract, "h100 is routed to an H100 server: %+v", reply)
}

// TestNoServerOfThatName: an offer to one server by name (bourse bid
// offer --take SERVER) that no live server has says the name is
// unknown, naming the field, rather than that no server has the GPUs.
func TestNoServerOfThatName(t *testing.T) {
	ctx := context.Background()
	h := housetest.New(t, exchange.Config{})
	h.Wallet("erin", "100")
	h.Server("gpu1", "H100", 1, nil)
	tm := job(1, "0.01")
	tm.Server = "gpu9"
	_, err := h.House.Offer(ctx, "erin", protocol.OfferRequest{RequestID: "named", Terms: tm})
	var e *bourse.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, bourse.ENoMatch, e.Code)
	assert.Equal(t, "terms.server", e.Field)
	assert.Contains(t, e.Message, `no live server named "gpu9"`)

	tm.Server = "gpu1"
	reply := offer(t, h, "erin", "named-right", tm, 0)
	require.NotNil(t, reply.Contract, "the server named: %+v", reply)
}
