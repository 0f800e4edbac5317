package server

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/protocol"
)

func TestAskSaysFreeBusyAndPrice(t *testing.T) {
	reserve := contract.Flat(dectest.D("0.001"))
	tn := newTestNode(t, Posted{P: reserve, MaxTimeLimit: 2 * time.Hour})
	a := tn.n.Hello(tn.now).Ask
	require.NotNil(t, a)
	require.NoError(t, a.Check(tn.n.cfg.GPUs))
	require.Len(t, a.Classes, 1)
	c := a.Classes[0]
	assert.Equal(t, 4, c.GPUs)
	assert.Equal(t, 4, c.Free)
	assert.Empty(t, c.FreeAt)
	assert.True(t, c.P.Equal(reserve), "the ask is the reserve: %v", c.P)
	assert.Equal(t, contract.Duration(2*time.Hour), a.MaxTimeLimit)

	// Two GPUs run a job with an hour's limit, one more is claimed for an
	// accept not yet started: one is free, two free up within the hour.
	tn.start("o1", "c1", job(2, "1", 30*time.Minute, time.Hour))
	d := tn.n.Decide(tn.now, protocol.ServerOffer{Offer: "o2", Terms: job(1, "1", time.Minute, time.Hour)})
	require.True(t, d.Accept)
	c = tn.n.Hello(tn.now).Ask.Classes[0]
	assert.Equal(t, 1, c.Free, "a claimed GPU is not free")
	assert.Equal(t, []protocol.FreeAt{{At: tn.now.Add(time.Hour).UTC(), GPUs: 2}}, c.FreeAt)
}

func TestAskOfPolicies(t *testing.T) {
	base := Posted{P: contract.Flat(dectest.D("0.001"))}
	t.Run("Utilization", func(t *testing.T) {
		tn := newTestNode(t, Utilization{Base: base, K: decimal.NewFromInt(1)})
		idle := tn.n.Hello(tn.now).Ask.Classes[0].P
		tn.start("o1", "c1", job(2, "1", 30*time.Minute, time.Hour))
		half := tn.n.Hello(tn.now).Ask.Classes[0].P
		assert.True(t, idle.Equal(base.P))
		assert.True(t, half.Equal(contract.Flat(dectest.D("0.0015"))), "half busy asks 1.5×: %v", half)
	})
	t.Run("Preempting", func(t *testing.T) {
		tn := newTestNode(t, Preempting{Base: base})
		p := job(3, "1", 30*time.Minute, time.Hour)
		p.Preemptible = true
		tn.start("o1", "c1", p)
		a := (*contract.Ask)(tn.n.Hello(tn.now).Ask)
		assert.True(t, a.Preempts)
		assert.Equal(t, 1, a.Classes[0].Free)
		assert.Equal(t, 3, a.Classes[0].Preemptible)
		require.Len(t, a.Classes[0].PreemptibleRuns, 1)
		assert.Equal(t, 3, a.Classes[0].PreemptibleRuns[0].GPUs)
		assert.True(t, a.Classes[0].PreemptibleRuns[0].Rate.Equal(p.FullUsePrice().Ceil(protocol.RatePlaces)), "its full-use rate")
		dear := job(4, "1", time.Minute, time.Hour)
		dear.P = contract.Flat(dectest.D("0.003"))
		assert.Equal(t, 4, a.Room(a.Classes[0], dear), "a guaranteed offer that pays more may have the preemptible GPUs")
		assert.Equal(t, 1, a.Room(a.Classes[0], job(4, "1", time.Minute, time.Hour)), "one that pays as much preempts nothing (Preempting.Decide)")
		assert.Equal(t, 1, a.Room(a.Classes[0], p))
	})
	t.Run("FairUse", func(t *testing.T) {
		tn := newTestNode(t, FairUse{Base: Bookings{Base: base}, MaxTimeLimit: 3 * time.Hour})
		a := tn.n.Hello(tn.now).Ask
		assert.True(t, a.Books)
		assert.Equal(t, contract.Duration(3*time.Hour), a.MaxTimeLimit)
		assert.True(t, a.Classes[0].P.Equal(base.P))
	})
	t.Run("NotAnAsker", func(t *testing.T) {
		// A policy of its own, which says nothing of what it asks, is
		// asked with a standard offer: its counter's curves.
		tn := newTestNode(t, onlyDecides{base})
		assert.True(t, tn.n.Hello(tn.now).Ask.Classes[0].P.Equal(base.P))
	})
}

// onlyDecides is a policy that is not an Asker.
type onlyDecides struct{ p Posted }

func (o onlyDecides) Decide(t contract.Terms, st View) Decision { return o.p.Decide(t, st) }

// TestCounterFromAskIsAccepted holds what docs/protocol.md promises a
// client: a counter-offer the exchange builds from a server's ask
// (contract.Reserve.Counter on the ask's curves and its free GPUs), taken
// at once, is one the server accepts, whatever offer it counters and
// whatever the server runs.
func TestCounterFromAskIsAccepted(t *testing.T) {
	rng := rand.New(rand.NewPCG(34, 1))
	checked := 0
	defer func() { assert.Greater(t, checked, 100, "too few counters checked") }()
	policies := []Policy{
		Posted{P: contract.Flat(dectest.D("0.001")), MaxTimeLimit: 90 * time.Minute},
		Posted{P: contract.Curve{{X: dectest.D("0"), Y: dectest.D("0.0005")}, {X: dectest.D("2"), Y: dectest.D("0.003")}}, Q: contract.Flat(dectest.D("0.0002"))},
		Utilization{Base: Posted{P: contract.Flat(dectest.D("0.001"))}, K: dectest.D("2")},
		Preempting{Base: Posted{P: contract.Flat(dectest.D("0.001"))}},
		FairUse{Base: Posted{P: contract.Flat(dectest.D("0.002"))}, MaxTimeLimit: time.Hour},
	}
	for pi, pol := range policies {
		for trial := range 40 {
			tn := newTestNode(t, pol)
			for i := range rng.IntN(4) { // some GPUs busy
				b := job(1, "1", 30*time.Minute, time.Hour)
				b.P, b.Q = contract.Flat(dectest.D("0.01")), contract.Flat(dectest.D("0.001"))
				b.Prepayment = b.CappedPrepayment(2)
				tn.start(fmt.Sprint("busy", i), fmt.Sprint("b", i), b)
			}
			a := (*contract.Ask)(tn.n.Hello(tn.now).Ask)
			c := a.Classes[0]
			if c.Free == 0 {
				continue
			}
			offer := job(1+rng.IntN(4), "1", 10*time.Minute, time.Duration(1+rng.IntN(180))*time.Minute)
			offer.Client = "bob"
			offer.P = contract.Flat(decimal.New(int64(rng.IntN(40)), -4))
			offer.Prepayment = offer.CappedPrepayment(2)
			if !offer.Prepayment.IsPositive() {
				continue
			}
			k, why := a.Reserve(c).Counter(offer, a.Room(c, offer), 2)
			if len(why) == 0 {
				k = offer // the offer meets the ask: it is its own counter
			}
			if k.IsZero() {
				continue
			}
			checked++
			d := tn.n.Decide(tn.now, protocol.ServerOffer{Offer: "take", Terms: k})
			assert.True(t, d.Accept, "policy %d trial %d: the ask's counter %+v to %+v refused: %s", pi, trial, k, offer, d.Reason)
		}
	}
}
