package exchange_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/housetest"
)

// TestHelloScale: a server that prices the currency at other decimal
// places than the ledger's is refused with what to set, before it is
// offered anything, in its hello and its heartbeats; one that does not
// say (older than the field) is taken.
func TestHelloScale(t *testing.T) {
	h := housetest.New(t, exchange.Config{})
	ctx := context.Background()
	hello := h.Server("atlas", "H100", 2, nil).Hello(h.Now())
	require.Equal(t, int32(2), *hello.Scale, "a server says its scale")

	zero := int32(0)
	hello.Scale = &zero
	_, err := h.House.Hello(ctx, "boreal", hello)
	require.Error(t, err)
	assert.Equal(t, bourse.EInvalid, bourse.ErrorCode(err))
	assert.Contains(t, err.Error(), "currency "+housetest.Currency+" has 2 decimal places on this exchange, and this server prices it at 0: set the server's currency.scale to 2 (or --scale 2)")
	assert.Equal(t, bourse.EInvalid, bourse.ErrorCode(h.House.Heartbeat(ctx, "atlas", hello)))

	hello.Scale = nil
	_, err = h.House.Hello(ctx, "old", hello)
	assert.NoError(t, err)
}
