package exchange_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/housetest"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/server"
)

// A contract's life as its client drives it, on the manual clock:
// counter-offers taken, stops and resumes, and what other clients see.

// TestCounterOffers: an offer below a server's reserve gets its
// counter-offer, another server's refusal beside it, and nothing is
// escrowed; taking the counter makes a contract at its terms, unless its
// GPUs were taken meanwhile: then capacity_gone, and nothing escrowed.
func TestCounterOffers(t *testing.T) {
	h := housetest.New(t, exchange.Config{})
	reserve := contract.Flat(dectest.D("0.02"))
	h.Server("gpu1", "H100", 1, server.Posted{P: reserve})
	closed := &closable{}
	closed.closed.Store(true)
	h.Server("gpu2", "H100", 2, closed)
	h.Wallet("alice", "100")
	wallet := h.Wallet("bob", "100")
	reply := offer(t, h, "bob", "o1", job(1, "0.01"), 0)
	assert.Nil(t, reply.Contract)
	require.Len(t, reply.Counters, 1, "%+v", reply)
	k := reply.Counters[0]
	assert.Equal(t, "gpu1", k.Server)
	assert.True(t, k.Terms.P.Equal(reserve))
	require.Len(t, reply.Rejections, 1)
	assert.Equal(t, "gpu2", reply.Rejections[0].Server)
	assert.True(t, h.Balance(wallet).Held.IsZero(), "no escrow for counters")

	take := func(id string) (protocol.OfferReply, error) {
		tm := k.Terms
		tm.Server = k.Server
		return h.House.Offer(context.Background(), "bob", protocol.OfferRequest{RequestID: id, Terms: tm, Counter: k.ID})
	}
	// alice takes gpu1's one GPU at its reserve meanwhile, for 5 s.
	dear := job(1, "0.02")
	dear.Job.Profile.Duration = 5 * time.Second
	require.NotNil(t, offer(t, h, "alice", "a1", dear, 0).Contract)
	_, err := take("o2")
	assert.Equal(t, bourse.ECapacityGone, bourse.ErrorCode(err), "%v", err)
	assert.True(t, h.Balance(wallet).Held.IsZero(), "nothing escrowed")

	h.Run(8*time.Second, time.Second) // alice's job ends; the counter still stands
	require.True(t, h.Now().Before(k.ValidUntil), "the counter lapsed at %v", k.ValidUntil)
	got, err := take("o3")
	require.NoError(t, err)
	require.NotNil(t, got.Contract, "%+v", got)
	assert.Equal(t, "gpu1", got.Contract.Server)
	assert.True(t, got.Contract.Terms.P.Equal(reserve))
	h.Audit()
}

// TestSuspendAndResume: a client suspends its running contract, which
// settles as suspended on its server's final reading; a new offer
// resumes it, and a running contract cannot be resumed. Another client
// sees nothing of the contract, and cannot stop it: its id is not found.
func TestSuspendAndResume(t *testing.T) {
	ctx := context.Background()
	h := housetest.New(t, exchange.Config{})
	h.Server("gpu1", "H100", 2, nil)
	h.Wallet("carol", "100")
	h.Wallet("mallory", "1")
	tm := job(1, "0.01")
	reply := offer(t, h, "carol", "k1", tm, 0)
	require.NotNil(t, reply.Contract)
	id := reply.Contract.ID
	h.Run(5*time.Second, time.Second)

	t.Run("OtherClientsCannotSee", func(t *testing.T) {
		_, err := h.House.Control(ctx, "mallory", id, contract.ReasonKilled)
		assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err))
		_, err = h.House.Contract(ctx, "mallory", id)
		assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err))
		cs, err := h.House.Contracts(ctx, "mallory", 10)
		require.NoError(t, err)
		assert.Empty(t, cs)
		_, err = h.House.Offer(ctx, "mallory", protocol.OfferRequest{RequestID: "steal", Terms: tm, Resumes: id})
		assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err), "resuming another's contract")
		assert.Equal(t, contract.StateRunning, contractOf(t, h, "carol", id).State)
	})

	_, err := h.House.Control(ctx, "carol", id, contract.ReasonSuspended)
	require.NoError(t, err)
	h.Run(2*time.Second, time.Second)
	c := contractOf(t, h, "carol", id)
	require.Equal(t, contract.StateSettled, c.State)
	assert.Equal(t, contract.ReasonSuspended, c.Reason)

	again, err := h.House.Offer(ctx, "carol", protocol.OfferRequest{RequestID: "k2", Terms: tm, Resumes: id})
	require.NoError(t, err)
	require.NotNil(t, again.Contract, "%+v", again)
	assert.Equal(t, id, again.Contract.Resumes)
	_, err = h.House.Offer(ctx, "carol", protocol.OfferRequest{RequestID: "k3", Terms: tm, Resumes: again.Contract.ID})
	assert.Equal(t, bourse.EInvalidOffer, bourse.ErrorCode(err), "a running contract cannot be resumed")
	cs, err := h.House.Contracts(ctx, "carol", 10)
	require.NoError(t, err)
	assert.Len(t, cs, 2)
	h.Audit()
}

// TestQuote: a quote hears what the servers would answer, the accepts
// and the counter-offers at their reserves, and binds nothing: no money
// held, no contract; its counter-offer may be taken. Its terms are
// checked as an offer's are.
func TestQuote(t *testing.T) {
	ctx := context.Background()
	h := housetest.New(t, exchange.Config{})
	h.Server("cheap", "H100", 2, server.Posted{P: contract.Flat(dectest.D("0.01"))})
	h.Server("dear", "H100", 2, server.Posted{P: contract.Flat(dectest.D("0.03"))})
	wallet := h.Wallet("alice", "100")
	all := job(2, "0.02")
	q, err := h.House.Quote(ctx, "alice", protocol.QuoteRequest{Terms: all})
	require.NoError(t, err)
	assert.Equal(t, []string{"cheap"}, q.Accepts)
	require.Len(t, q.Counters, 1, "%+v", q)
	assert.Equal(t, "dear", q.Counters[0].Server)
	assert.True(t, q.Counters[0].Terms.P.Equal(contract.Flat(dectest.D("0.03"))), "the counter asks the reserve: %v", q.Counters[0].Terms.P)
	b := h.Balance(wallet)
	assert.True(t, b.Available.Equal(dectest.D("100")) && b.Held.IsZero(), "%+v", b)

	took, err := h.House.Offer(ctx, "alice", protocol.OfferRequest{RequestID: "take-dear", Terms: q.Counters[0].Terms, Counter: q.Counters[0].ID})
	require.NoError(t, err)
	require.NotNil(t, took.Contract, "%+v", took)
	assert.Equal(t, "dear", took.Contract.Server)

	for _, tc := range []struct {
		name string
		bad  func(*contract.Terms)
		code bourse.Code
	}{
		{"NoGPUs", func(t *contract.Terms) { t.GPUs = 0 }, bourse.EInvalidOffer},
		{"AnotherClient", func(t *contract.Terms) { t.Client = "bob" }, bourse.EPermission},
		{"NoMatch", func(t *contract.Terms) { t.GPUs = 3 }, bourse.ENoMatch},
	} {
		bad := all
		tc.bad(&bad)
		_, err := h.House.Quote(ctx, "alice", protocol.QuoteRequest{Terms: bad})
		assert.Equal(t, tc.code, bourse.ErrorCode(err), "%s: %v", tc.name, err)
	}
	assert.True(t, h.Balance(wallet).Held.Equal(took.Contract.Terms.Prepayment), "only the counter taken is escrowed")
}
