package exchange_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/housetest"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/server"
)

// posted is a posted price of p a GPU-second, flat.
func posted(p string) server.Policy { return server.Posted{P: contract.Flat(dectest.D(p))} }

// levelsOf writes a side's levels as "price×GPUs/orders", to compare at a
// glance.
func levelsOf(ls []protocol.Level) []string {
	out := []string{}
	for _, l := range ls {
		out = append(out, fmt.Sprintf("%s×%d/%d", l.Price, l.GPUs, l.Orders))
	}
	return out
}

// dec writes a decimal the book may leave out as "-".
func dec(d *decimal.Decimal) string {
	if d == nil {
		return "-"
	}
	return d.String()
}

// covered is tm with a time limit its flat price covers to the cent: its
// prepayment pays that price for every second of it, so that it is sure
// to pay its price.
func covered(tm contract.Terms) contract.Terms {
	tm.TimeLimit = 100 * time.Second
	tm.Prepayment = tm.CappedPrepayment(2)
	return tm
}

// TestMarketDepth: market data shows both sides of each model's book by
// price level: the live servers' asks with GPUs free (the GPUs free, at
// the price of one GPU used in full, rounded up), and the waiting offers
// (the GPUs wanted, at what they are sure to pay, as the book orders
// them, rounded down); the best of each, the spread and mid; and names no
// party. A server whose GPUs are all taken, and one not heard from within
// ServerLostAfter, add nothing to the asks. An offer dear only at full
// use, or backed by a small prepayment, bids what it is sure to pay, not
// its curves' price at full use.
func TestMarketDepth(t *testing.T) {
	h := housetest.New(t, exchange.Config{ServerLostAfter: 10 * time.Second})
	h.Server("flat-a", "H100", 4, posted("0.0010"))
	h.Server("flat-b", "H100", 2, posted("0.0010"))
	h.Server("dear", "H100", 8, posted("0.0012"))
	// A thousandth at three GPUs used: a third of it at one, 0.000333…
	h.Server("ramp", "H100", 3, server.Posted{P: contract.Ramp(decimal.Zero, dectest.D("3"), dectest.D("0.001"))})
	h.Server("busy", "H100", 2, posted("0.0009"))
	h.Server("stale", "H100", 4, posted("0.0002"))
	h.Server("ampere", "A100", 2, posted("0.0005"))
	clients := []string{"alice", "bob", "carol", "dave", "erin"}
	for _, c := range clients {
		h.Wallet(c, "100")
	}
	// busy's GPUs taken; stale falls silent for longer than
	// ServerLostAfter while the others speak.
	r := offer(t, h, "erin", "fill", named(job(2, "0.0009"), "busy"), 0)
	require.NotNil(t, r.Contract, "%+v", r)
	h.Router.Silence("stale", true)
	h.Advance(11 * time.Second)
	h.Beat()

	wait := time.Hour
	for _, o := range []struct {
		client string
		terms  contract.Terms
	}{
		{"alice", covered(job(2, "0.0003"))},
		{"bob", covered(job(1, "0.0003"))},
		// 0.0008 at three GPUs used, nothing at none: sure of nothing.
		{"carol", func() contract.Terms {
			tm := job(1, "0")
			tm.P = contract.Ramp(decimal.Zero, dectest.D("3"), dectest.D("0.0008"))
			tm.Prepayment = tm.CappedPrepayment(2)
			return tm
		}()},
		{"dave", func() contract.Terms { tm := covered(job(1, "0.0001")); tm.Class.Model = ""; return tm }()},
		// 1000 a GPU-second on 0.16 of prepayment (the probe's made-up
		// depth): sure of 0.16 over 2 GPUs for 100 s.
		{"erin", func() contract.Terms {
			tm := named(job(2, "0"), "busy") // waits for busy, whose GPUs are taken
			tm.TimeLimit = 100 * time.Second
			tm.P = contract.Flat(dectest.D("1000"))
			tm.Prepayment = dectest.D("0.16")
			return tm
		}()},
	} {
		r := offer(t, h, o.client, o.client+"-1", o.terms, wait)
		require.NotNil(t, r.Queued, "%s waits: %+v", o.client, r)
	}

	m := market(t, h)
	h100 := line(m, "H100")
	require.NotNil(t, h100.Book)
	b := *h100.Book
	assert.Equal(t, []string{"0.00033334×3/1", "0.001×6/2", "0.0012×8/1"}, levelsOf(b.Asks),
		"ramp's third rounded up; flat-a and flat-b at one level; busy and stale not there")
	assert.Equal(t, []string{"0.0008×2/1", "0.0003×3/2", "0×1/1"}, levelsOf(b.Bids),
		"erin's prepayment over its GPUs and time limit; alice and bob at one level; carol sure of nothing")
	assert.Equal(t, 17, b.AskGPUs)
	assert.Equal(t, 6, b.BidGPUs)
	assert.Equal(t, "0.00033334", dec(b.BestAsk))
	assert.Equal(t, "0.0008", dec(b.BestBid))
	assert.Equal(t, "-0.00046666", dec(b.Spread), "crossed: erin is sure to pay more than ramp asks")
	assert.Equal(t, "0.00056667", dec(b.Mid))
	assert.Equal(t, 4, h100.Waiting.Offers, "the book's own figures as before")

	a100 := line(m, "A100")
	require.NotNil(t, a100.Book)
	assert.Equal(t, []string{"0.0005×2/1"}, levelsOf(a100.Book.Asks))
	assert.Empty(t, a100.Book.Bids)
	assert.Equal(t, "0.0005", dec(a100.Book.BestAsk))
	assert.Nil(t, a100.Book.BestBid)
	assert.Nil(t, a100.Book.Spread, "no spread with one side")
	assert.Nil(t, a100.Book.Mid)

	anyLine := line(m, "any")
	require.NotNil(t, anyLine.Book, "dave asks for no model")
	assert.Equal(t, []string{"0.0001×1/1"}, levelsOf(anyLine.Book.Bids))
	assert.Empty(t, anyLine.Book.Asks)

	t.Run("NoParty", func(t *testing.T) {
		all, err := json.Marshal(m)
		require.NoError(t, err)
		for _, c := range clients {
			assert.NotContains(t, string(all), c)
		}
		for _, l := range m.Models {
			book, err := json.Marshal(l.Book)
			require.NoError(t, err)
			for _, s := range []string{"flat-a", "flat-b", "dear", "ramp", "busy", "stale", "ampere"} {
				assert.NotContains(t, string(book), s)
			}
		}
	})

	t.Run("StaleBack", func(t *testing.T) {
		// stale speaks again: its ask counts again, and crosses the book.
		h.Router.Silence("stale", false)
		h.Beat()
		b := *line(market(t, h), "H100").Book
		assert.Equal(t, "0.0002", dec(b.BestAsk))
		assert.Equal(t, "-0.0006", dec(b.Spread), "crossed: a waiting offer is sure to pay more than the price of an ask it has not been matched with yet")
	})
}

// TestMarketDepthBounded: each side shows its BookLevels levels nearest
// the other side; its GPUs count every level.
func TestMarketDepthBounded(t *testing.T) {
	h := housetest.New(t, exchange.Config{})
	n := protocol.BookLevels + 5
	for i := range n {
		h.Server(fmt.Sprintf("s%02d", i), "H100", 1, posted(fmt.Sprintf("0.%04d", 50+i)))
	}
	for i := range n {
		client := fmt.Sprintf("c%02d", i)
		h.Wallet(client, "100")
		r := offer(t, h, client, "w", covered(job(1, fmt.Sprintf("0.%04d", 1+i))), time.Hour)
		require.NotNil(t, r.Queued, "%+v", r)
	}
	b := line(market(t, h), "H100").Book
	require.NotNil(t, b)
	require.Len(t, b.Asks, protocol.BookLevels)
	require.Len(t, b.Bids, protocol.BookLevels)
	assert.Equal(t, "0.005", b.Asks[0].Price.String(), "the cheapest asks")
	assert.Equal(t, fmt.Sprintf("0.%04d", 50+protocol.BookLevels-1), b.Asks[protocol.BookLevels-1].Price.String())
	assert.Equal(t, fmt.Sprintf("0.%04d", n), b.Bids[0].Price.String(), "the dearest bids")
	assert.Equal(t, fmt.Sprintf("0.%04d", n-protocol.BookLevels+1), b.Bids[protocol.BookLevels-1].Price.String())
	assert.Equal(t, n, b.AskGPUs)
	assert.Equal(t, n, b.BidGPUs)
}

// TestMarketLastTrade: the last contract of the window that paid for use
// is the market's last trade: its price per GPU-second used and when it
// settled.
func TestMarketLastTrade(t *testing.T) {
	h := housetest.New(t, exchange.Config{MarketWindow: time.Hour})
	h.Server("gpu1", "H100", 4, nil)
	now := h.Now()
	record(t, h, "c1", "gpu1", "60", "0.60", now.Add(-30*time.Minute))
	record(t, h, "c2", "gpu1", "60", "1.80", now.Add(-10*time.Minute))
	record(t, h, "c0", "gpu1", "60", "1.20", now.Add(-20*time.Minute))
	l := line(market(t, h), "H100")
	require.NotNil(t, l.Last)
	assert.Equal(t, "0.03", l.Last.Price.String(), "c2, settled last")
	assert.True(t, l.Last.At.Equal(now.Add(-10*time.Minute)), "%v", l.Last.At)
}

// TestMarketModelsFolded: models are lines as routing matches them,
// whatever their case: a client's offer waiting for "h100" is on the
// servers' "H100" line, with both servers' GPUs, and one server's "h100"
// beside another's "H100" is one line, under the least spelling.
func TestMarketModelsFolded(t *testing.T) {
	h := housetest.New(t, exchange.Config{})
	h.Server("s1", "H100", 2, posted("0.0050"))
	h.Server("s2", "h100", 3, posted("0.0060"))
	h.Wallet("ada", "100")
	tm := job(8, "0.0010")
	tm.Class.Model = "h100"
	r := offer(t, h, "ada", "w", tm, time.Hour)
	require.NotNil(t, r.Queued, "%+v", r)
	m := market(t, h)
	require.Len(t, m.Models, 1, "%+v", m.Models)
	l := m.Models[0]
	assert.Equal(t, "H100", l.Model)
	assert.Equal(t, 5, l.GPUs)
	assert.Equal(t, 1, l.Waiting.Offers)
	require.NotNil(t, l.Book)
	assert.Equal(t, 5, l.Book.AskGPUs)
	assert.Equal(t, 8, l.Book.BidGPUs)
}

// TestMarketUnsoldLinesBounded: clients name the models of waiting
// offers; lines of models no server has and none sold are at most
// sixteen a currency, those with the most GPUs waiting, so that market
// data does not grow with what clients make up.
func TestMarketUnsoldLinesBounded(t *testing.T) {
	h := housetest.New(t, exchange.Config{})
	h.Server("s1", "H100", 2, posted("0.0050"))
	for i := range 20 {
		client := fmt.Sprintf("c%02d", i)
		h.Wallet(client, "100")
		tm := job(1+i, "0.0010")
		tm.Class.Model = fmt.Sprintf("made-up-%02d", i)
		r := offer(t, h, client, "w", tm, time.Hour)
		require.NotNil(t, r.Queued, "%+v", r)
	}
	m := market(t, h)
	require.Len(t, m.Models, 1+16, "H100 and sixteen made-up models")
	assert.Equal(t, 2, line(m, "H100").GPUs, "a model a server has is always shown")
	for i := range 20 {
		name := fmt.Sprintf("made-up-%02d", i)
		if i >= 4 {
			assert.Equal(t, 1+i, line(m, name).Waiting.GPUs, "%s: among the sixteen with most GPUs waiting", name)
		} else {
			assert.Empty(t, line(m, name).Model, "%s: fewest GPUs waiting, not shown", name)
		}
	}
}
