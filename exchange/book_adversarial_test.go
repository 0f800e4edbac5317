package exchange_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/housetest"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/internal/metrictest"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/server"
)

// The book against clients and servers that try to game it: each test is
// a reproduction from an adversarial trial (issue 32, item 4).

// dearAtFullUse is the trial's junk: 1000 a GPU-second at full use and
// nothing below, with a prepayment of 0.01. Every posted price refuses it.
func dearAtFullUse() contract.Terms {
	t := job(1, "0")
	t.P = contract.Curve{{X: dectest.D("0.999"), Y: dectest.D("0")}, {X: dectest.D("1"), Y: dectest.D("1000")}}
	t.Prepayment = dectest.D("0.01")
	return t
}

// junk has clients c0..c(n-1), each with wallet, queue per offers of tm
// each, waiting an hour, and returns their ids.
func junk(t *testing.T, h *housetest.Harness, clients, per int, wallet string, tm contract.Terms) []string {
	t.Helper()
	var ids []string
	for c := range clients {
		client := fmt.Sprint("junk", c)
		h.Wallet(client, wallet)
		for i := range per {
			q := offer(t, h, client, fmt.Sprint("j", i), tm, time.Hour)
			require.NotNil(t, q.Queued, "%s %d: %+v", client, i, q)
			ids = append(ids, q.Queued.ID)
		}
	}
	return ids
}

// onlyContract is client's one contract, or fails.
func onlyContract(t *testing.T, h *housetest.Harness, client string) contract.Contract {
	t.Helper()
	cs, err := h.House.Contracts(context.Background(), client, 10)
	require.NoError(t, err)
	require.Len(t, cs, 1, "%s's contracts", client)
	return cs[0]
}

// TestBookOrderIsWhatItPays: an offer whose curve is the reserve up to
// 99% use and 1000 at full use, queued after carol's, does not go before
// hers (the trial's went first and paid 0.001 a GPU-second), and the
// trial's junk, dear only at full use with a prepayment of 0.01, goes
// last: the book is ordered by what an offer is sure to pay.
func TestBookOrderIsWhatItPays(t *testing.T) {
	h := housetest.New(t, exchange.Config{})
	h.Server("gpu1", "H100", 1, server.Posted{P: contract.Flat(dectest.D("0.001"))})
	h.Wallet("alice", "100")
	h.Wallet("carol", "100")
	h.Wallet("mallory", "1000000")
	h.Wallet("trudy", "1")
	require.NotNil(t, offer(t, h, "alice", "busy", job(1, "0.001"), 0).Contract)

	carol := offer(t, h, "carol", "c", job(1, "0.01"), time.Hour)
	require.NotNil(t, carol.Queued)
	h.Advance(time.Second)
	sneaky := job(1, "0")
	sneaky.P = contract.Curve{{X: dectest.D("0"), Y: dectest.D("0.001")}, {X: dectest.D("0.99"), Y: dectest.D("0.001")}, {X: dectest.D("1"), Y: dectest.D("1000")}}
	sneaky.Job.Profile.Utilization = dectest.D("0.99")
	sneaky.Prepayment = sneaky.CappedPrepayment(2)
	m := offer(t, h, "mallory", "m", sneaky, time.Hour)
	require.NotNil(t, m.Queued)
	assert.True(t, m.Queued.Price.Equal(dectest.D("0.001")), "sure of its price below full use: %s", m.Queued.Price)
	assert.Equal(t, 1, m.Queued.Ahead, "behind carol's")
	j := offer(t, h, "trudy", "j", dearAtFullUse(), time.Hour)
	require.NotNil(t, j.Queued)
	assert.True(t, j.Queued.Price.IsZero(), "sure of nothing: %s", j.Queued.Price)
	assert.Equal(t, 2, j.Queued.Ahead, "last")
	w, err := h.Store.Waiting(context.Background(), carol.Queued.ID)
	require.NoError(t, err)
	assert.Equal(t, 0, w.Ahead, "carol's first")

	h.Run(70*time.Second, time.Second) // alice's job ends: gpu1 frees up
	c := onlyContract(t, h, "carol")
	assert.Equal(t, carol.Queued.ID, c.ID, "carol's matched first")
	cs, err := h.House.Contracts(context.Background(), "mallory", 10)
	require.NoError(t, err)
	assert.Empty(t, cs, "mallory's waits behind hers")
	h.Audit()
}

// TestBookRefusedOffersDoNotBlock: 112 offers sure to pay more than
// carol's, which the server refuses (their time limit is over its
// longest), do not keep carol's, which it takes at once, from being
// matched when its GPUs free up (the trial's stayed unmatched 90 s with 4
// GPUs free): a pass negotiates at most MatchBatch offers and the next
// goes on from there, and an offer a server refused is not offered to it
// again while it has no more GPUs free.
func TestBookRefusedOffersDoNotBlock(t *testing.T) {
	h := housetest.New(t, exchange.Config{})
	h.Server("gpu1", "H100", 4, server.Posted{P: contract.Flat(dectest.D("0.01")), MaxTimeLimit: 10 * time.Minute})
	h.Wallet("alice", "100")
	h.Wallet("carol", "100")
	require.NotNil(t, offer(t, h, "alice", "busy", job(4, "0.01"), 0).Contract)
	long := job(1, "0.05")
	long.TimeLimit, long.Prepayment = time.Hour, decimal.Zero
	long.Prepayment = long.CappedPrepayment(2) // 180, sure of 0.05 a GPU-second
	junk(t, h, 7, 16, "3000", long)
	carol := offer(t, h, "carol", "c", job(1, "0.01"), time.Hour)
	require.NotNil(t, carol.Queued)
	assert.Equal(t, 112, carol.Queued.Ahead, "the refused ones are sure to pay more")

	var freed time.Time
	for i := 0; i < 120 && freed.IsZero(); i++ {
		h.Run(time.Second, time.Second)
		if a := onlyContract(t, h, "alice"); a.State == contract.StateSettled {
			freed = a.SettledAt
		}
	}
	require.False(t, freed.IsZero(), "alice's job ended")
	h.Run(5*time.Second, time.Second)
	c := onlyContract(t, h, "carol")
	assert.WithinDuration(t, freed, c.AcceptedAt, 3*time.Second, "carol's matched within a few passes of gpu1 freeing")
	asked := h.Router.AskedOf("gpu1")
	h.Run(20*time.Second, time.Second)
	assert.Equal(t, asked, h.Router.AskedOf("gpu1"), "the refused offers are not offered again while gpu1 has no more free")
	h.Audit()
}

// TestBookFlappingServer: a server whose heartbeats say 0 and 1 free GPUs
// by turns at 20 Hz, with offers it refuses waiting, cannot make the
// exchange offer it the book more than once per MatchGap, nor offer it an
// offer it refused again while it has no more free (the trial's got
// 17,856 offers in 20 s, and its exchange spent 6.56 CPU-seconds).
func TestBookFlappingServer(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := housetest.New(t, exchange.Config{Metrics: reg})
	node := h.Server("flap", "H100", 1, server.Posted{P: contract.Flat(dectest.D("0.01"))})
	junk(t, h, 7, 16, "1", dearAtFullUse())
	ctx := context.Background()
	passes := counter(t, reg, "bourse_exchange_match_passes_total")
	asked := h.Router.AskedOf("flap")
	for i := range 400 { // 20 s: a heartbeat every 50 ms, a Match every 100 ms as the leader's driver calls it
		h.Advance(50 * time.Millisecond)
		hello := node.Hello(h.Now())
		hello.Free = i % 2
		require.NoError(t, h.House.Heartbeat(ctx, "flap", hello))
		if i%2 == 1 {
			h.House.Match(ctx)
		}
	}
	assert.LessOrEqual(t, h.Router.AskedOf("flap")-asked, 112, "each junk offer once at most")
	assert.LessOrEqual(t, counter(t, reg, "bourse_exchange_match_passes_total")-passes, 21.0, "a pass per MatchGap at most")
}

// counter is the value of the counter name in reg, 0 if it has none.
func counter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	return metrictest.Counter(t, reg, name)
}

// TestBookSilentServer: sixteen offers naming a server that heartbeats
// (its free count flapping) but answers no offer do not hold up carol's,
// which another server takes (the trial's waited 63 s): a server that
// does not answer is quiet for RematchEvery, costing a pass one
// negotiation's wait, not one per offer.
func TestBookSilentServer(t *testing.T) {
	h := housetest.New(t, exchange.Config{})
	h.Server("gpu1", "H100", 1, server.Posted{P: contract.Flat(dectest.D("0.01"))})
	hung := h.Server("hung", "H100", 4, server.Posted{P: contract.Flat(dectest.D("0.01"))})
	h.Router.Hang("hung")
	h.Wallet("alice", "100")
	h.Wallet("carol", "100")
	h.Wallet("mallory", "1000")
	ctx := context.Background()
	require.NotNil(t, offer(t, h, "alice", "busy", job(1, "0.01"), 0).Contract)
	named := job(1, "0.05")
	named.Server = "hung"
	for i := range 16 {
		require.NotNil(t, offer(t, h, "mallory", fmt.Sprint("m", i), named, time.Hour).Queued)
	}
	carol := offer(t, h, "carol", "c", job(1, "0.01"), time.Hour)
	require.NotNil(t, carol.Queued)
	asked := h.Router.AskedOf("hung") // each once as it was offered

	var freed time.Time
	for i := 0; i < 600 && freed.IsZero(); i++ {
		h.Advance(500 * time.Millisecond)
		h.Tick()
		hello := hung.Hello(h.Now())
		hello.Free = 3 + i%2
		require.NoError(t, h.House.Heartbeat(ctx, "hung", hello))
		h.House.Sweep(ctx)
		h.House.Match(ctx)
		if a := onlyContract(t, h, "alice"); a.State == contract.StateSettled {
			freed = a.SettledAt
		}
	}
	require.False(t, freed.IsZero(), "alice's job ended")
	h.Run(10*time.Second, time.Second)
	c := onlyContract(t, h, "carol")
	assert.WithinDuration(t, freed, c.AcceptedAt, 5*time.Second, "carol's matched within a negotiation's wait of gpu1 freeing")
	assert.LessOrEqual(t, h.Router.AskedOf("hung")-asked, 4, "asked once per RematchEvery at most")
	h.Audit()
}

// TestBookFullOfJunk: clients that fill the book with offers sure to pay
// nothing (the trial's: a prepayment of 0.01, dear only at full use) do
// not keep out an offer sure to pay more: it takes the place of the last,
// whose client is told it was outbid; junk cannot outbid junk.
func TestBookFullOfJunk(t *testing.T) {
	h := housetest.New(t, exchange.Config{BookTotal: 64})
	h.Server("gpu1", "H100", 1, server.Posted{P: contract.Flat(dectest.D("0.01"))})
	h.Wallet("alice", "100")
	h.Wallet("carol", "100")
	h.Wallet("trudy", "1")
	require.NotNil(t, offer(t, h, "alice", "busy", job(1, "0.01"), 0).Contract)
	junk(t, h, 4, 16, "0.16", dearAtFullUse())
	h.Advance(time.Second)
	_, err := h.House.Offer(context.Background(), "trudy", protocol.OfferRequest{RequestID: "t", Terms: dearAtFullUse(), Wait: contract.Duration(time.Hour)})
	assert.Equal(t, bourse.EBookFull, bourse.ErrorCode(err), "junk outbids no junk: %v", err)

	carol := offer(t, h, "carol", "c", job(1, "0.01"), time.Hour)
	require.NotNil(t, carol.Queued, "the full book takes an offer sure to pay more")
	assert.Equal(t, 0, carol.Queued.Ahead)
	outbid := 0
	for c := range 4 {
		for _, e := range h.Events(fmt.Sprint("junk", c)) {
			if e.Type == protocol.EventLeftBook {
				assert.Equal(t, contract.LeftOutbid, e.Waiting.Left)
				outbid++
			}
		}
	}
	assert.Equal(t, 1, outbid, "the last junk offer left")
	book, err := h.Store.Book(context.Background(), exchange.BookQuery{})
	require.NoError(t, err)
	assert.Len(t, book, 64)
}
