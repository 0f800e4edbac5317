package exchange_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/housetest"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/server"
)

// counted is a posted price that counts the offers and quotes it decides.
type counted struct {
	server.Posted
	n *atomic.Int64
}

func (c counted) Decide(t contract.Terms, st server.View) server.Decision {
	c.n.Add(1)
	return c.Posted.Decide(t, st)
}

// manyServers registers n servers of 4 H100s, server i asking 0.001 +
// i/10000 a GPU-second, their policies counting into decided.
func manyServers(h *housetest.Harness, n int, decided *atomic.Int64) {
	for i := range n {
		price := dectest.D(fmt.Sprintf("0.%04d", 10+i))
		h.Server(fmt.Sprintf("s%02d", i), "H100", 4, counted{server.Posted{P: contract.Flat(price)}, decided})
	}
}

// TestOfferGoesToAFew: among forty servers, an offer is sent to at most
// RouteTo, the cheapest with room whose asks it meets, and one of them
// makes its contract.
func TestOfferGoesToAFew(t *testing.T) {
	h := housetest.New(t, exchange.Config{RouteTo: 3})
	var decided atomic.Int64
	manyServers(h, 40, &decided)
	h.Wallet("alice", "100")
	r := offer(t, h, "alice", "r1", job(1, "0.002"), 0) // meets s00 … s10
	require.NotNil(t, r.Contract, "%+v", r)
	asked := 0
	for i := range 40 {
		if n := h.Router.AskedOf(fmt.Sprintf("s%02d", i)); n > 0 {
			asked++
			assert.Less(t, i, 3, "s%02d asked: not among the three cheapest", i)
		}
	}
	assert.Equal(t, 3, asked, "RouteTo servers asked, of forty")
	assert.Contains(t, []string{"s00", "s01", "s02"}, r.Contract.Server)

	// The three cheapest full, the next three are the candidates.
	for i := range 3 {
		for g := 0; g < 4; g++ {
			_ = offer(t, h, "alice", fmt.Sprintf("fill-%d-%d", i, g), named(job(1, "0.002"), fmt.Sprintf("s%02d", i)), 0)
		}
	}
	h.Beat()
	r = offer(t, h, "alice", "r2", job(1, "0.002"), 0)
	require.NotNil(t, r.Contract)
	assert.Contains(t, []string{"s03", "s04", "s05"}, r.Contract.Server, "the cheapest with room")
	h.Audit()
}

func named(t contract.Terms, server string) contract.Terms {
	t.Server = server
	return t
}

// TestCounterFromAsks: an offer below every ask is answered from the
// asks of the cheapest servers with room, asking none of them; the
// counter-offer taken at once makes a contract with its server.
func TestCounterFromAsks(t *testing.T) {
	h := housetest.New(t, exchange.Config{RouteTo: 4})
	var decided atomic.Int64
	manyServers(h, 20, &decided)
	h.Wallet("alice", "100")
	r := offer(t, h, "alice", "low", job(2, "0.0005"), 0)
	require.Nil(t, r.Contract)
	assert.Zero(t, decided.Load(), "no server was asked")
	require.Len(t, r.Counters, 4, "%+v", r)
	for i, k := range r.Counters {
		assert.Equal(t, fmt.Sprintf("s%02d", i), k.Server, "cheapest first")
		assert.True(t, strings.HasPrefix(k.ID, "ask-"), k.ID)
		assert.True(t, k.Terms.P.Equal(contract.Flat(dectest.D(fmt.Sprintf("0.%04d", 10+i)))), "the ask's price: %v", k.Terms.P)
	}
	got, err := h.House.Offer(context.Background(), "alice", protocol.OfferRequest{RequestID: "take", Terms: r.Counters[1].Terms, Counter: r.Counters[1].ID})
	require.NoError(t, err)
	require.NotNil(t, got.Contract, "%+v", got)
	assert.Equal(t, "s01", got.Contract.Server)
	assert.Equal(t, int64(1), decided.Load(), "only the counter's server, asked once")
	h.Audit()
}

// TestQuoteAsksNoServer: a quote is answered from the asks alone.
func TestQuoteAsksNoServer(t *testing.T) {
	h := housetest.New(t, exchange.Config{})
	var decided atomic.Int64
	manyServers(h, 20, &decided)
	q, err := h.House.Quote(context.Background(), "alice", protocol.QuoteRequest{Terms: job(1, "0.00105")})
	require.NoError(t, err)
	assert.Zero(t, decided.Load(), "no server was asked")
	assert.Equal(t, []string{"s00"}, q.Accepts, "only s00 asks no more than 0.00105")
	assert.NotEmpty(t, q.Counters, "the next cheapest, from their asks")
	assert.Equal(t, "s01", q.Counters[0].Server)
}

// TestNoRoomAsksNoServer: with every server full, an offer asks none of
// them and hears when GPUs free up.
func TestNoRoomAsksNoServer(t *testing.T) {
	h := housetest.New(t, exchange.Config{})
	var decided atomic.Int64
	manyServers(h, 2, &decided)
	h.Wallet("alice", "100")
	for i := range 8 {
		require.NotNil(t, offer(t, h, "alice", fmt.Sprint("fill", i), job(1, "0.01"), 0).Contract)
		h.Beat()
	}
	before := decided.Load()
	r := offer(t, h, "alice", "more", job(1, "0.01"), 0)
	assert.Equal(t, before, decided.Load(), "no server was asked")
	require.Len(t, r.Rejections, 1, "%+v", r)
	assert.Contains(t, r.Rejections[0].Reason, "free up by "+h.Now().Add(2*time.Minute).UTC().Format(time.RFC3339))
}
