package exchange_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/housetest"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/server"
)

// TestAwaitOnTheHouseClock: a try that finds its request id claimed by a
// negotiation that never ends (its instance stopped) waits on the
// House's clock, not the wall clock's: on a manual clock it takes the
// claim over once the claim's time has passed and negotiates, instead
// of polling until its client gives up.
func TestAwaitOnTheHouseClock(t *testing.T) {
	h := housetest.New(t, exchange.Config{})
	h.Server("gpu1", "H100", 2, server.Posted{P: contract.Flat(dectest.D("0.05"))})
	h.Wallet("dave", "100")
	// A stopped instance's claim on dave's request "r", its deadline a
	// negotiation and a margin ahead, as the House writes it.
	id := exchange.ContractID("dave", "r")
	_, err := h.Store.Lock(context.Background(), exchange.Lock{ID: id, Token: "stopped", Until: h.Now().Add(10 * time.Second)}, h.Now())
	require.NoError(t, err)

	// The wall-clock bound says only that the try ended by itself: on
	// the wall clock it would have polled for 14 s.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	reply, err := h.House.Offer(ctx, "dave", protocol.OfferRequest{RequestID: "r", Terms: job(1, "0.05")})
	require.NoError(t, err, "the try gives up waiting on the House's clock and takes the claim over")
	require.NotNil(t, reply.Contract, "%+v", reply)
	require.Equal(t, id, reply.Contract.ID)
	h.Audit()
}
