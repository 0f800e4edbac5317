package strategy

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// recorder is Cheapest, remembering what it was asked and told.
type recorder struct {
	Cheapest
	bids     []time.Time // the now of each Bid
	observed []observation
}

type observation struct {
	accepted bool
	waited   time.Duration
}

func (r *recorder) Bid(j Job, rejected int, now time.Time) contract.Terms {
	r.bids = append(r.bids, now)
	return r.Cheapest.Bid(j, rejected, now)
}

func (r *recorder) Observe(accepted bool, waited time.Duration) {
	r.observed = append(r.observed, observation{accepted, waited})
}

func counter(id, price string, valid time.Time) contract.Counter {
	tm := Fixed{}.Bid(job, 0, t0)
	tm.P = contract.Flat(decimal.RequireFromString(price))
	return contract.Counter{ID: id, Server: "atlas", Terms: tm, ValidUntil: valid}
}

func contractOf(id string) protocol.OfferReply {
	return protocol.OfferReply{Contract: &protocol.ContractView{ID: id, Server: "atlas"}}
}

func errCode(code bourse.Code) error { return &bourse.Error{Code: code, Message: string(code)} }

// negotiation is a Negotiator over a recorder that keeps the rounds it
// reports.
func negotiation(n Negotiation) (*Negotiator, *recorder, *[]Round) {
	s := &recorder{}
	var rounds []Round
	n.Strategy, n.Job = s, job
	n.Report = func(r Round) { rounds = append(rounds, r) }
	return NewNegotiator(n), s, &rounds
}

func TestNegotiator(t *testing.T) {
	ms := time.Millisecond

	t.Run("ContractAtOnce", func(t *testing.T) {
		g, s, rounds := negotiation(Negotiation{})
		a := g.Next(t0)
		require.Equal(t, Offer, a.Op)
		assert.Equal(t, "train-0", a.RequestID)
		assert.True(t, a.Terms.P.Equal(contract.Flat(decimal.RequireFromString("0.025"))), "half the value: %v", a.Terms.P)
		g.Answer(t0.Add(30*ms), contractOf("k1"), nil)
		a = g.Next(t0.Add(30 * ms))
		require.Equal(t, Done, a.Op)
		assert.Equal(t, "k1", a.Contract.ID)
		assert.Equal(t, []observation{{true, 30 * ms}}, s.observed, "the latency on the clock it was given")
		require.Len(t, *rounds, 1)
		assert.Nil(t, (*rounds)[0].Took)
		assert.Equal(t, Done, g.Next(t0.Add(time.Hour)).Op, "the outcome stays")
	})

	t.Run("CounterTaken", func(t *testing.T) {
		g, s, rounds := negotiation(Negotiation{RequestID: "req"})
		g.Next(t0)
		valid := t0.Add(time.Minute)
		g.Answer(t0.Add(10*ms), protocol.OfferReply{Counters: []contract.Counter{
			counter("dear", "0.06", valid), counter("ok", "0.04", valid)}}, nil)
		a := g.Next(t0.Add(10 * ms))
		require.Equal(t, Take, a.Op)
		assert.Equal(t, "req-0-take", a.RequestID)
		assert.Equal(t, "ok", a.Counter.ID, "the cheapest within the value")
		g.Answer(t0.Add(25*ms), contractOf("k2"), nil)
		a = g.Next(t0.Add(25 * ms))
		require.Equal(t, Done, a.Op)
		assert.Equal(t, "k2", a.Contract.ID)
		assert.Equal(t, []observation{{true, 25 * ms}}, s.observed, "from the offer to the take's contract")
		require.Len(t, *rounds, 1)
		require.NotNil(t, (*rounds)[0].Took)
		assert.Equal(t, "ok", (*rounds)[0].Took.ID)
		assert.Equal(t, "k2", (*rounds)[0].Reply.Contract.ID)
	})

	t.Run("CapacityGoneEndsTheRound", func(t *testing.T) {
		g, s, rounds := negotiation(Negotiation{Pause: 100 * ms})
		g.Next(t0)
		g.Answer(t0, protocol.OfferReply{Counters: []contract.Counter{counter("ok", "0.04", t0.Add(time.Minute))}}, nil)
		require.Equal(t, Take, g.Next(t0).Op)
		gone := errCode(bourse.ECapacityGone)
		g.Answer(t0.Add(5*ms), protocol.OfferReply{}, gone)
		a := g.Next(t0.Add(5 * ms))
		require.Equal(t, Wait, a.Op)
		assert.Equal(t, 100*ms, a.Wait, "Pause·1 after the first round")
		assert.Equal(t, 40*ms, g.Next(t0.Add(65*ms)).Wait, "the wait shrinks as the clock goes")
		a = g.Next(t0.Add(105 * ms))
		require.Equal(t, Offer, a.Op)
		assert.Equal(t, "train-1", a.RequestID)
		assert.Equal(t, []time.Time{t0, t0.Add(105 * ms)}, s.bids)
		assert.Equal(t, []observation{{false, 5 * ms}}, s.observed)
		require.Len(t, *rounds, 1)
		assert.ErrorIs(t, (*rounds)[0].Err, gone)
		assert.Equal(t, "ok", (*rounds)[0].Took.ID)
	})

	t.Run("ErrorsEndItAtOnce", func(t *testing.T) {
		for _, err := range []error{
			errCode(bourse.EInsufficientFunds), errCode(bourse.ENoMatch), errCode(bourse.EInvalidOffer),
			errCode(bourse.EUnavailable), errCode(bourse.EDeadlineExceeded), errCode(bourse.EPermission),
			errors.New("no code: internal"), context.Canceled,
		} {
			t.Run("Offer/"+string(bourse.ErrorCode(err)), func(t *testing.T) {
				g, s, rounds := negotiation(Negotiation{})
				g.Next(t0)
				g.Answer(t0, protocol.OfferReply{}, err)
				a := g.Next(t0)
				require.Equal(t, Failed, a.Op)
				assert.Equal(t, err, a.Err, "the exchange's error, as it came")
				assert.Empty(t, s.observed, "an error is no verdict on the price")
				require.Len(t, *rounds, 1)
				assert.Equal(t, err, (*rounds)[0].Err)
			})
			t.Run("Take/"+string(bourse.ErrorCode(err)), func(t *testing.T) {
				g, _, rounds := negotiation(Negotiation{})
				g.Next(t0)
				g.Answer(t0, protocol.OfferReply{Counters: []contract.Counter{counter("ok", "0.04", t0.Add(time.Minute))}}, nil)
				require.Equal(t, Take, g.Next(t0).Op)
				g.Answer(t0, protocol.OfferReply{}, err)
				a := g.Next(t0)
				require.Equal(t, Failed, a.Op)
				assert.Equal(t, err, a.Err)
				require.Len(t, *rounds, 1)
				assert.NotNil(t, (*rounds)[0].Took)
			})
		}
	})

	t.Run("GivesUpAfterRounds", func(t *testing.T) {
		g, s, rounds := negotiation(Negotiation{Rounds: 3})
		now := t0
		var waits []time.Duration
		var ids []string
		for {
			a := g.Next(now)
			if a.Op == Wait {
				waits = append(waits, a.Wait)
				now = now.Add(a.Wait)
				continue
			}
			if a.Op != Offer {
				require.Equal(t, Failed, a.Op)
				assert.ErrorIs(t, a.Err, ErrGaveUp)
				assert.EqualError(t, a.Err, "gave up after 3 offers (1 countered): raise the value or try again later")
				break
			}
			ids = append(ids, a.RequestID)
			var reply protocol.OfferReply
			if len(ids) == 2 { // a counter-offer above the value: not taken
				reply.Counters = []contract.Counter{counter("dear", "0.06", now.Add(time.Minute))}
			}
			g.Answer(now, reply, nil)
		}
		assert.Equal(t, []string{"train-0", "train-1", "train-2"}, ids)
		assert.Equal(t, []time.Duration{200 * ms, 400 * ms}, waits, "Pause·round, and no pause after the last")
		assert.Equal(t, []time.Time{t0, t0.Add(200 * ms), t0.Add(600 * ms)}, s.bids)
		assert.Len(t, s.observed, 3)
		assert.Len(t, *rounds, 3)
	})

	t.Run("TakeWithoutContractEndsTheRound", func(t *testing.T) {
		g, s, _ := negotiation(Negotiation{})
		g.Next(t0)
		g.Answer(t0, protocol.OfferReply{Counters: []contract.Counter{counter("ok", "0.04", t0.Add(time.Minute))}}, nil)
		g.Next(t0)
		g.Answer(t0, protocol.OfferReply{Rejections: []protocol.Rejection{{Server: "atlas", Reason: "no"}}}, nil)
		assert.Equal(t, Wait, g.Next(t0).Op)
		assert.Equal(t, []observation{{false, 0}}, s.observed)
	})

	t.Run("NextRepeatsUntilAnswered", func(t *testing.T) {
		g, s, _ := negotiation(Negotiation{Adjust: func(t *contract.Terms) { t.Server = "atlas" }})
		a := g.Next(t0)
		again := g.Next(t0.Add(time.Second))
		assert.Equal(t, a, again, "the same offer under the same request id: a safe retry")
		assert.Equal(t, "atlas", a.Terms.Server, "Adjust fixes what the strategy does not decide")
		assert.Len(t, s.bids, 1)
		g.Answer(t0.Add(time.Second), contractOf("k"), nil)
		g.Answer(t0.Add(2*time.Second), protocol.OfferReply{}, errCode(bourse.EInternal))
		assert.Equal(t, Done, g.Next(t0).Op, "an answer with nothing outstanding is ignored")
	})

	t.Run("Deterministic", func(t *testing.T) {
		run := func() []Action {
			j := job // runtime 10s: the latest start is t0+10s
			j.Deadline = t0.Add(20 * time.Second)
			g := NewNegotiator(Negotiation{Strategy: Deadline{Window: 10 * time.Second}, Job: j, Pause: time.Second})
			var as []Action
			now := t0
			for len(as) < 40 {
				a := g.Next(now)
				as = append(as, a)
				switch a.Op {
				case Wait:
					now = now.Add(a.Wait)
				case Offer:
					g.Answer(now, protocol.OfferReply{}, nil)
				default:
					return as
				}
			}
			return as
		}
		first := run()
		assert.Equal(t, first, run())
		var prices []string
		for _, a := range first {
			if a.Op == Offer {
				prices = append(prices, a.Terms.P[0].Y.String())
			}
		}
		assert.Equal(t, []string{"0.015", "0.0185", "0.0255", "0.036", "0.05", "0.05"}, prices,
			"Deadline prices from the virtual time, offers at 0, 1, 3, 6, 10 and 15s: from 0.3 of the value 10s before the latest start to all of it")
	})
}

// fakeClock is a clock that moves only when slept on.
type fakeClock struct {
	now   time.Time
	slept []time.Duration
}

func (c *fakeClock) Now() time.Time { return c.now }

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.slept = append(c.slept, d)
	c.now = c.now.Add(d)
	return nil
}

// scripted is an exchange that answers from a script, each answer taking
// latency on the clock.
type scripted struct {
	clock   *fakeClock
	latency time.Duration
	answers []answer
	calls   []string // "offer ID" or "take ID COUNTER"
}

type answer struct {
	reply protocol.OfferReply
	err   error
}

func (x *scripted) next() (protocol.OfferReply, error) {
	x.clock.now = x.clock.now.Add(x.latency)
	a := x.answers[0]
	x.answers = x.answers[1:]
	return a.reply, a.err
}

func (x *scripted) Offer(_ context.Context, id string, _ contract.Terms) (protocol.OfferReply, error) {
	x.calls = append(x.calls, "offer "+id)
	return x.next()
}

func (x *scripted) Take(_ context.Context, id string, k contract.Counter) (protocol.OfferReply, error) {
	x.calls = append(x.calls, "take "+id+" "+k.ID)
	return x.next()
}

func TestNegotiate(t *testing.T) {
	ctx := context.Background()
	ms := time.Millisecond
	valid := t0.Add(time.Hour)

	t.Run("OnTheGivenClock", func(t *testing.T) {
		clock := &fakeClock{now: t0}
		x := &scripted{clock: clock, latency: 20 * ms, answers: []answer{
			{reply: protocol.OfferReply{}},
			{reply: protocol.OfferReply{Counters: []contract.Counter{counter("a", "0.04", valid)}}},
			{err: errCode(bourse.ECapacityGone)},
			{reply: protocol.OfferReply{Counters: []contract.Counter{counter("b", "0.045", valid)}}},
			{reply: contractOf("k")},
		}}
		s := &recorder{}
		k, err := Negotiate(ctx, x, Negotiation{Strategy: s, Job: job, Pause: 100 * ms, Clock: clock})
		require.NoError(t, err)
		assert.Equal(t, "k", k.ID)
		assert.Equal(t, []string{"offer train-0", "offer train-1", "take train-1-take a", "offer train-2", "take train-2-take b"}, x.calls)
		assert.Equal(t, []time.Duration{100 * ms, 200 * ms}, clock.slept)
		assert.Equal(t, []observation{{false, 20 * ms}, {false, 40 * ms}, {true, 40 * ms}}, s.observed)
		assert.Equal(t, t0.Add(5*20*ms+300*ms), clock.now)
	})

	t.Run("Fails", func(t *testing.T) {
		clock := &fakeClock{now: t0}
		funds := errCode(bourse.EInsufficientFunds)
		x := &scripted{clock: clock, answers: []answer{{err: funds}}}
		_, err := Negotiate(ctx, x, Negotiation{Strategy: Fixed{}, Job: job, Clock: clock})
		assert.Equal(t, funds, err)
		assert.Empty(t, clock.slept)
	})

	t.Run("ContextEndsThePause", func(t *testing.T) {
		clock := &fakeClock{now: t0}
		cctx, cancel := context.WithCancel(ctx)
		x := &scripted{clock: clock, answers: []answer{{reply: protocol.OfferReply{}}}}
		_, err := Negotiate(cctx, x, Negotiation{Strategy: Fixed{}, Job: job, Clock: clock, Report: func(Round) { cancel() }})
		assert.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, []string{"offer train-0"}, x.calls)
	})

	t.Run("WallClock", func(t *testing.T) {
		x := &scripted{clock: &fakeClock{}, answers: []answer{{reply: protocol.OfferReply{}}, {reply: contractOf("k")}}}
		began := time.Now()
		k, err := Negotiate(ctx, x, Negotiation{Strategy: Fixed{}, Job: job, Pause: 10 * ms})
		require.NoError(t, err)
		assert.Equal(t, "k", k.ID)
		assert.GreaterOrEqual(t, time.Since(began), 10*ms, "slept the pause in real time")
	})
}

// TestAdaptiveOnTheGivenClock: Adaptive judges an acceptance quick or not
// by the latency the Negotiator measures on the clock it is driven by,
// here a virtual one: 50ms is quick (below Quick, 100ms) and lowers its
// next opening bid; 150ms is not and leaves it.
func TestAdaptiveOnTheGivenClock(t *testing.T) {
	a := &Adaptive{}
	opening := func() string { return a.Bid(job, 0, t0).P[0].Y.String() }
	accept := func(latency time.Duration) {
		g := NewNegotiator(Negotiation{Strategy: a, Job: job})
		g.Next(t0)
		g.Answer(t0.Add(latency), contractOf("k"), nil)
		require.Equal(t, Done, g.Next(t0.Add(latency)).Op)
	}
	assert.Equal(t, "0.02", opening(), "0.4 of the value 0.05")
	accept(150 * time.Millisecond)
	assert.Equal(t, "0.02", opening())
	accept(50 * time.Millisecond)
	assert.Equal(t, "0.015", opening(), "0.3 of the value")
}
