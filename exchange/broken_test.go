package exchange_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/housetest"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/server"
)

// liar asks its posted price and refuses every offer, however it meets
// the ask.
type liar struct{ server.Posted }

func (liar) Decide(contract.Terms, server.View) server.Decision {
	return server.Decision{Reason: "not today"}
}

// TestLyingAsksLoseTheirPlace: eight servers post asks cheaper than the
// one honest server's and refuse every offer. With RouteTo 8 they fill
// every offer's places and the honest server is never asked; once each
// has broken three asks (an offer refused on each, a heartbeat apart),
// they are demoted, and offers go to the honest server, for
// RematchEvery. When that ends they are asked again, break their asks
// again at once, and are demoted twice as long. Offers that name a liar
// still go to it. And an honest server whose one ask went stale (it
// refuses every offer routed on it) keeps its place.
func TestLyingAsksLoseTheirPlace(t *testing.T) {
	const window = 30 * time.Second
	h := housetest.New(t, exchange.Config{RematchEvery: window, ServerLostAfter: time.Hour})
	for i := range 8 {
		h.Server(fmt.Sprintf("liar%d", i), "H100", 4, liar{server.Posted{P: contract.Flat(dectest.D("0.001"))}})
	}
	h.Server("honest", "H100", 16, server.Posted{P: contract.Flat(dectest.D("0.002"))})
	h.Wallet("alice", "1000")

	// failures offers until one makes a contract, and returns how many
	// did not.
	n := 0
	failures := func() int {
		t.Helper()
		for f := 0; f < 10; f++ {
			n++
			h.Beat() // each offer on asks sent since the last
			r := offer(t, h, "alice", fmt.Sprintf("r%d", n), job(1, "0.003"), 0)
			if r.Contract != nil {
				assert.Equal(t, "honest", r.Contract.Server)
				return f
			}
			assert.Len(t, r.Rejections, 8, "the eight liars asked: %+v", r)
		}
		t.Fatal("no offer reached the honest server")
		return 0
	}
	assert.Equal(t, 3, failures(), "three refusals each break the liars' asks")
	for range 5 {
		assert.Zero(t, failures(), "the honest server is asked first")
	}
	for i := range 8 {
		assert.Equal(t, 3, h.Router.AskedOf(fmt.Sprintf("liar%d", i)), "liar%d", i)
	}
	r := offer(t, h, "alice", "named", named(job(1, "0.003"), "liar0"), 0)
	assert.Nil(t, r.Contract)
	assert.Equal(t, 4, h.Router.AskedOf("liar0"), "an offer naming a demoted server still goes to it")

	h.Advance(window)
	h.Beat()
	assert.Equal(t, 3, failures(), "back in their places, they break their asks again")
	h.Advance(window)
	h.Beat()
	assert.Zero(t, failures(), "demoted twice as long the second time")
	h.Advance(window)
	h.Beat()
	assert.Equal(t, 3, failures())

	// One ask gone stale: four offers refused on it by every liar. They
	// are not demoted by it (it is one ask), and the honest server,
	// back in ninth place behind them, is not asked.
	h.Advance(4 * window)
	h.Beat()
	for i := range 4 {
		r := offer(t, h, "alice", fmt.Sprintf("stale%d", i), job(1, "0.003"), 0)
		assert.Nil(t, r.Contract, "on the liars' one ask")
	}
	h.Audit()
}
