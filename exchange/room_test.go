package exchange_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/housetest"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/protocol"
)

// The rules of a server's room as the exchange counts it (docs/DESIGN.md,
// revision 5: its ask, less what the exchange gave it since, plus what
// ended there since), on the manual clock; natsvc's route tests keep
// what NATS adds.

// TestClaimHeardNotCountedTwice: a server says its claim in a heartbeat
// while the negotiation is still on (an agent speaks soon after a
// claim); the exchange then takes the server's word for its room, and
// does not take the contract's GPUs out of it a second time: the other
// GPU is still there for the next offer. (Counted twice, the room was
// short until the next heartbeat, and offers were turned away with "no
// live server has 1 GPUs free".)
func TestClaimHeardNotCountedTwice(t *testing.T) {
	h := housetest.New(t, exchange.Config{})
	node := h.Server("gpu1", "H100", 2, posted("0.001"))
	h.Wallet("alice", "100")
	ctx := context.Background()

	asked, release := h.Router.Stall("gpu1")
	done := make(chan protocol.OfferReply, 1)
	go func() {
		r, err := h.House.Offer(ctx, "alice", protocol.OfferRequest{RequestID: "first", Terms: job(1, "0.01")})
		assert.NoError(t, err)
		done <- r
	}()
	<-asked // gpu1 has claimed a GPU for the offer; its accept is not heard yet
	h.Advance(time.Second)
	hello := node.Hello(h.Now())
	require.Equal(t, 1, hello.Free, "the claim, said in the heartbeat")
	require.NoError(t, h.House.Heartbeat(ctx, "gpu1", hello))
	release()
	r := <-done
	require.NotNil(t, r.Contract, "%+v", r)

	oneGPULeft(t, h, "after a claim said in a heartbeat during its negotiation")
}

// TestRetryTakesNoRoom: a retried offer whose first try made a contract
// is answered that contract, and only the contract made takes its GPUs
// out of the server's ask: counted for every retry, the room fell to
// nothing until the server's next heartbeat, and offers were turned away
// with "no live server has 1 GPUs free now".
func TestRetryTakesNoRoom(t *testing.T) {
	h := housetest.New(t, exchange.Config{})
	h.Server("gpu1", "H100", 2, posted("0.001"))
	h.Wallet("alice", "100")
	first := offer(t, h, "alice", "first", job(1, "0.01"), 0)
	require.NotNil(t, first.Contract, "%+v", first)
	for range 3 {
		h.Advance(time.Second)
		again := offer(t, h, "alice", "first", job(1, "0.01"), 0)
		require.NotNil(t, again.Contract, "%+v", again)
		assert.Equal(t, first.Contract.ID, again.Contract.ID)
	}
	oneGPULeft(t, h, "after one contract and three retries of it")
}

// oneGPULeft checks that gpu1 has the room of one GPU, after what: a
// quote finds it, and an offer takes it.
func oneGPULeft(t *testing.T, h *housetest.Harness, after string) {
	t.Helper()
	q, err := h.House.Quote(context.Background(), "alice", protocol.QuoteRequest{Terms: job(1, "0.01")})
	require.NoError(t, err)
	assert.Equal(t, []string{"gpu1"}, q.Accepts, "gpu1's other GPU, %s: %+v", after, q)
	next := offer(t, h, "alice", "next", job(1, "0.01"), 0)
	require.NotNil(t, next.Contract, "refused for room the server has, %s: %+v", after, next)
	h.Audit()
}

// TestStaleAskCostsARefusal: a server's ask says less than its policy
// takes now (its ask is stale, or it lies). An offer meeting the ask is
// sent to it and refused; a counter-offer built from the ask and taken
// is refused too: no contract, no money held, nothing moved.
func TestStaleAskCostsARefusal(t *testing.T) {
	h := housetest.New(t, exchange.Config{})
	node := h.Server("stale", "H100", 1, posted("0.01"))
	w := h.Wallet("alice", "100")
	ctx := context.Background()
	hello := node.Hello(h.Now())
	require.NotNil(t, hello.Ask)
	require.Len(t, hello.Ask.Classes, 1)
	hello.Ask.Classes[0].P = contract.Flat(dectest.D("0.005")) // half what its policy takes
	require.NoError(t, h.House.Heartbeat(ctx, "stale", hello))
	wallet := h.Balance(w)

	meets := offer(t, h, "alice", "meets", job(1, "0.006"), 0)
	assert.Nil(t, meets.Contract, "%+v", meets)
	assert.Equal(t, 1, h.Router.AskedOf("stale"), "the offer that met its ask was sent to it")

	below := offer(t, h, "alice", "below", job(1, "0.001"), 0)
	assert.Equal(t, 1, h.Router.AskedOf("stale"), "below its ask: not sent")
	require.Len(t, below.Counters, 1, "%+v", below)
	k := below.Counters[0]
	assert.True(t, k.Terms.P.Equal(contract.Flat(dectest.D("0.005"))), "a counter-offer from the ask: %v", k.Terms.P)
	taken := k.Terms
	taken.Server = k.Server
	got, err := h.House.Offer(ctx, "alice", protocol.OfferRequest{RequestID: "take", Terms: taken, Counter: k.ID})
	require.NoError(t, err, "a refused counter is an answer, not an error")
	assert.Nil(t, got.Contract, "%+v", got)
	assert.Equal(t, 2, h.Router.AskedOf("stale"), "the counter-offer taken was sent to its server")

	assert.Equal(t, wallet, h.Balance(w), "no money held or moved")
	cs, err := h.Store.Contracts(ctx, "alice", 0)
	require.NoError(t, err)
	assert.Empty(t, cs)
	h.Audit()
}
