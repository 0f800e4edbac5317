package contract_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/internal/dectest"
)

// TestRoomCountsRunsOutbid: a guaranteed offer has room on a preempting
// server in the free GPUs and in the preemptible runs it outbids at full
// use, not in those that pay as much as it or more; a preemptible offer,
// or one to a server that does not preempt, in the free GPUs alone; a
// server of old that names no runs, in all its preemptible GPUs.
func TestRoomCountsRunsOutbid(t *testing.T) {
	c := contract.ClassAsk{Model: "H100", GPUs: 8, Free: 1, Preemptible: 5, PreemptibleRuns: []contract.PreemptibleRun{
		{GPUs: 2, Rate: dectest.D("0.002")}, {GPUs: 3, Rate: dectest.D("0.004")}}}
	offer := func(price string, preemptible bool) contract.Terms {
		return contract.Terms{GPUs: 1, TimeLimit: time.Hour, P: contract.Flat(dectest.D(price)), Preemptible: preemptible}
	}
	a := &contract.Ask{Preempts: true, Classes: []contract.ClassAsk{c}}
	assert.Equal(t, 1, a.Room(c, offer("0.002", false)), "as much as the cheapest run: outbids none")
	assert.Equal(t, 3, a.Room(c, offer("0.003", false)), "outbids the 0.002 run")
	assert.Equal(t, 6, a.Room(c, offer("0.005", false)), "outbids both")
	assert.Equal(t, 1, a.Room(c, offer("0.005", true)), "a preemptible offer preempts nothing")
	assert.Equal(t, 1, (&contract.Ask{Classes: a.Classes}).Room(c, offer("0.005", false)), "a server that does not preempt")
	old := c
	old.PreemptibleRuns = nil
	assert.Equal(t, 6, a.Room(old, offer("0.001", false)), "a server of old: every preemptible GPU counts")
}

// TestAskServes: a class takes an offer that it has GPUs enough for (of the
// offer's class, models compared without case), that meets its ask, and
// that it has room for now; a booking needs GPUs, not room, and a server
// that books, unless the class names no price.
func TestAskServes(t *testing.T) {
	c := contract.ClassAsk{Model: "H100", MemoryMiB: 81920, GPUs: 4, Free: 1, Preemptible: 2, P: contract.Flat(dectest.D("0.002"))}
	offer := func(gpus int, price string) contract.Terms {
		return contract.Terms{GPUs: gpus, Class: contract.Class{Model: "h100"}, TimeLimit: time.Hour, P: contract.Flat(dectest.D(price))}
	}
	a := &contract.Ask{Classes: []contract.ClassAsk{c}, MaxTimeLimit: contract.Duration(2 * time.Hour)}
	assert.True(t, c.Fits(contract.Class{Model: "h100", MinMemoryMiB: 80000}))
	assert.False(t, c.Fits(contract.Class{Model: "A100"}))
	assert.True(t, c.Enough(offer(4, "0")), "GPUs enough, room or not")
	assert.False(t, c.Enough(offer(5, "1")), "more GPUs than the class has")

	assert.True(t, a.Serves(c, offer(1, "0.002"), false), "meets the ask, with room")
	assert.False(t, a.Serves(c, offer(1, "0.001"), false), "below the ask")
	assert.False(t, a.Serves(c, offer(2, "0.003"), false), "no room for two: the server does not preempt")
	long := offer(1, "0.003")
	long.TimeLimit = 3 * time.Hour
	assert.False(t, a.Serves(c, long, false), "over the ask's time limit")
	assert.False(t, a.Serves(c, offer(4, "0.003"), true), "a booking to a server that does not book")

	a.Books, a.Preempts = true, true
	assert.True(t, a.Serves(c, offer(4, "0.003"), true), "a booking needs GPUs, not room")
	assert.True(t, a.Serves(c, offer(3, "0.003"), false), "free and preemptible GPUs are room for a guaranteed offer")
	assert.Equal(t, 3, a.MostRoom(c))
	a.Preempts = false
	assert.Equal(t, 1, a.MostRoom(c))

	old := contract.ClassAsk{Model: "H100", GPUs: 4, Free: 4}
	assert.True(t, (&contract.Ask{}).Serves(old, offer(2, "0"), true), "a class of old, unpriced, is asked even for a booking")
}

// TestAskCounterFor: an ask counters an offer with the GPUs it has room for,
// its time limit and its curves where the offer's fall short; an offer
// that meets it with room gets no counter.
func TestAskCounterFor(t *testing.T) {
	c := contract.ClassAsk{Model: "H100", GPUs: 4, Free: 2, P: contract.Flat(dectest.D("0.002"))}
	a := &contract.Ask{Classes: []contract.ClassAsk{c}, MaxTimeLimit: contract.Duration(time.Hour)}
	offer := contract.Terms{GPUs: 3, TimeLimit: 2 * time.Hour, P: contract.Flat(dectest.D("0.001")), Prepayment: dectest.D("10")}
	k, why := a.CounterFor(c, offer, 6)
	assert.Len(t, why, 3, "GPUs, time limit and p: %v", why)
	assert.Equal(t, 2, k.GPUs, "the GPUs free")
	assert.Equal(t, time.Hour, k.TimeLimit)
	assert.True(t, k.P.Equal(c.P), "the ask's p")

	met := contract.Terms{GPUs: 2, TimeLimit: time.Hour, P: contract.Flat(dectest.D("0.002")), Prepayment: dectest.D("10")}
	k, why = a.CounterFor(c, met, 6)
	assert.Empty(t, why)
	assert.True(t, k.IsZero(), "an offer that meets the ask with room is its own answer")
	assert.True(t, a.Serves(c, met, false))
}
