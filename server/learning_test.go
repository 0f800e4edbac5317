package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/protocol"
)

func TestLearningGrid(t *testing.T) {
	l, err := NewLearning(LearningConfig{Base: Posted{P: contract.Flat(dectest.D("0.001"))}, Floor: dectest.D("0.5"), Ceiling: dectest.D("4"), Levels: 4})
	require.NoError(t, err)
	var got []string
	for _, m := range l.Multipliers() {
		got = append(got, m.String())
	}
	assert.Equal(t, []string{"0.5", "1", "2", "4"}, got, "geometric: each twice the last")
	assert.Equal(t, "0.001", l.Current().P[0].Y.String(), "until it first chooses it posts the base price")
	assert.Equal(t, "0.004", l.prices[3].P[0].Y.String())

	for name, c := range map[string]LearningConfig{
		"CeilingUnderFloor": {Floor: dectest.D("2"), Ceiling: dectest.D("1")},
		"OneLevel":          {Levels: 1},
		"TooManyLevels":     {Levels: MaxLearningLevels + 1},
		"ShortEpoch":        {Epoch: time.Millisecond},
		"MaxEpochUnder":     {Epoch: time.Hour, MaxEpoch: time.Minute},
		"CeilingTooHigh":    {Ceiling: decimal.NewFromInt(MaxLearningMultiplier + 1)},
		"NegativeFloor":     {Floor: dectest.D("-1")},
		"NoBasePrice":       {Base: Posted{}},
	} {
		t.Run(name, func(t *testing.T) {
			if c.Base.P == nil && name != "NoBasePrice" {
				c.Base = Posted{P: contract.Flat(dectest.D("0.001"))}
			}
			_, err := NewLearning(c)
			assert.Error(t, err)
		})
	}
}

func TestGammaMean(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, shape := range []float64{0.3, 1, 3.5, 40} {
		var sum, sq float64
		const n = 20000
		for range n {
			x := gamma(r, shape)
			sum += x
			sq += x * x
		}
		mean, variance := sum/n, sq/n-(sum/n)*(sum/n)
		assert.InEpsilon(t, shape, mean, 0.03, "Gamma(%v)'s mean is its shape", shape)
		assert.InEpsilon(t, shape, variance, 0.1, "and so is its variance")
	}
}

// learnMarket drives one node with a learning policy through a market
// whose demand curve is known: clients arrive at rate perMinute, each
// values a GPU-second at a draw from U(0, top), opens at a token bid and
// takes the node's counter-offer (the posted price) when it is within its
// value; each job is one GPU for ten minutes.
type learnMarket struct {
	t      *testing.T
	n      *Node
	l      *Learning
	now    time.Time
	rng    *rand.Rand
	top    float64
	rate   float64 // arrivals a second
	ids    int
	earned decimal.Decimal
	// levelTime is how long each level was posted, since reset.
	levelTime []time.Duration
	lastLevel int
	since     time.Time
}

func newLearnMarket(t *testing.T, gpus int, perMinute float64, seed uint64) *learnMarket {
	l, err := NewLearning(LearningConfig{Base: Posted{P: contract.Flat(dectest.D("0.001"))}, Floor: dectest.D("0.5"), Ceiling: dectest.D("4"),
		Levels: 7, Epoch: 10 * time.Minute, Seed: seed})
	require.NoError(t, err)
	m := &learnMarket{t: t, l: l, now: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), rng: rand.New(rand.NewPCG(seed, 7)), top: 0.004,
		rate: perMinute / 60, levelTime: make([]time.Duration, 7)}
	var gs []contract.GPU
	for i := range gpus {
		gs = append(gs, h100(i))
	}
	counter := 0
	m.n, err = NewNode(NodeConfig{ID: "gpu1", Currency: currency.Currency{Code: "GPU", Scale: 4}, GPUs: gs, Policy: l,
		Runner: &Synthetic{Now: func() time.Time { return m.now }}, ReadingEvery: time.Hour,
		NewID:  func() string { counter++; return fmt.Sprintf("k%d", counter) },
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	m.since, m.lastLevel = m.now, l.Current().level(l)
	return m
}

// level is the index of the grid level a posted price is.
func (p Posted) level(l *Learning) int {
	for k, q := range l.prices {
		if q.P.Equal(p.P) {
			return k
		}
	}
	return -1
}

// run trades for d: arrivals, and the node's ticks when it wakes.
func (m *learnMarket) run(d time.Duration) {
	end := m.now.Add(d)
	next := m.now.Add(m.gap())
	for m.now.Before(end) {
		wake := m.n.Wake()
		if !wake.IsZero() && !wake.After(next) {
			m.advance(wake)
			due := m.n.Tick(m.now)
			for _, s := range due.Stops {
				require.NoError(m.t, s.Job.Stop(context.Background(), s.Reason))
				_, err := m.n.Stopped(m.now, s.Contract)
				require.NoError(m.t, err)
			}
			continue
		}
		m.advance(next)
		m.arrive()
		next = m.now.Add(m.gap())
	}
}

func (m *learnMarket) gap() time.Duration {
	return time.Duration(m.rng.ExpFloat64() / m.rate * float64(time.Second))
}

// advance moves the clock, counting the time the level was posted.
func (m *learnMarket) advance(to time.Time) {
	m.levelTime[m.lastLevel] += to.Sub(m.now)
	m.now = to
	m.lastLevel = m.l.Current().level(m.l)
}

func (m *learnMarket) arrive() {
	m.ids++
	value := decimal.NewFromFloat(m.rng.Float64() * m.top).Round(6)
	t := contract.Terms{Client: "c", Currency: "GPU", GPUs: 1, TimeLimit: 15 * time.Minute, P: contract.Flat(dectest.D("0.0001")),
		Job: &contract.JobSpec{Profile: &contract.Profile{Utilization: decimal.NewFromInt(1), Duration: 10 * time.Minute}}}
	t.Prepayment = t.CappedPrepayment(4)
	offer := fmt.Sprint("o", m.ids)
	d := m.n.Decide(m.now, protocol.ServerOffer{Offer: offer, Terms: t})
	if !d.Accept {
		if len(d.Counters) == 0 {
			return // full
		}
		c := d.Counters[0]
		if c.Terms.FullUsePrice().Cmp(contract.Flat(value).At(decimal.Zero)) > 0 {
			return // dearer than it is worth
		}
		t = c.Terms
		if d = m.n.Decide(m.now, protocol.ServerOffer{Offer: offer, Terms: t, Counter: c.ID}); !d.Accept {
			return
		}
	}
	id := fmt.Sprint("c", m.ids)
	_, _, err := m.n.Begin(context.Background(), func() time.Time { return m.now },
		protocol.Start{Offer: offer, Contract: protocol.ContractView{ID: id, Client: "c", Server: "gpu1", Terms: t}}, func([]Stop) {})
	require.NoError(m.t, err)
	m.earned = m.earned.Add(t.P[0].Y.Mul(decimal.NewFromInt(600)))
}

// reset starts counting the time each level is posted afresh.
func (m *learnMarket) reset() {
	clear(m.levelTime)
	m.since = m.now
}

// share is the share of the time since reset that each level was posted.
func (m *learnMarket) share() []float64 {
	out := make([]float64, len(m.levelTime))
	for k, d := range m.levelTime {
		out[k] = d.Seconds() / m.now.Sub(m.since).Seconds()
	}
	return out
}

// mean is the mean multiplier posted since reset.
func (m *learnMarket) mean() float64 {
	var x float64
	for k, s := range m.share() {
		x += s * m.l.mults[k].InexactFloat64()
	}
	return x
}

// TestLearningFindsTheBestPrice is the learner on a market with a known
// demand curve. A client of value v ~ U(0, 0.004) pays the posted price p
// when p ≤ v, so a server with room earns at the rate λ·p·(1 − p/0.004),
// highest at p = 0.002: the grid's ×2. With 64 GPUs and at most ten
// GPUs' worth of demand, capacity never binds, and after two weeks the
// learner posts ×2 most of the time. With 4 GPUs it binds: by Erlang's
// loss formula ×2 (five GPUs' worth of demand, 40% of it lost) carries
// 3.0 GPUs at 0.002, 0.0060 a second, and ×2.83 (2.9 GPUs' worth, 20%
// lost) carries 2.35 at 0.00283, 0.0066: the learner posts ×2.83. Were a
// full server's refusals taken for low demand it would go cheaper, not
// dearer.
func TestLearningFindsTheBestPrice(t *testing.T) {
	for _, c := range []struct {
		name string
		gpus int
		best int // the level that earns most
	}{{"RoomToSpare", 64, 4}, {"CapacityBinds", 4, 5}} {
		t.Run(c.name, func(t *testing.T) {
			m := newLearnMarket(t, c.gpus, 1, 1)
			m.run(14 * 24 * time.Hour)
			m.reset()
			m.run(3 * 24 * time.Hour)
			share := m.share()
			t.Logf("share of the last three days at each level %.2f, mean multiplier %.2f", share, m.mean())
			for k, s := range share {
				if k != c.best {
					assert.Greater(t, share[c.best], s, "level %d earns most; level %d was posted more", c.best, k)
				}
			}
			assert.Greater(t, share[c.best], 0.5, "the best level most of the time")
		})
	}
}

// TestLearningEpochsGrow: with max_epoch the epochs last the epoch
// through the sweep and as long again, then grow as the square root of
// the epochs since, up to max_epoch; without it every epoch is the epoch.
func TestLearningEpochsGrow(t *testing.T) {
	lengths := func(maxEpoch time.Duration) []time.Duration {
		l, err := NewLearning(LearningConfig{Base: Posted{P: contract.Flat(dectest.D("0.001"))}, Levels: 4,
			Epoch: 10 * time.Minute, MaxEpoch: maxEpoch, Seed: 1})
		require.NoError(t, err)
		at := now
		l.Observe(Outcome{Kind: OutcomeTime, Now: at, GPUs: 4, Free: 4})
		var out []time.Duration
		for range 200 {
			next := l.Next()
			out = append(out, next.Sub(at))
			at = next
			l.Observe(Outcome{Kind: OutcomeTime, Now: at, GPUs: 4, Free: 4})
		}
		return out
	}
	fixed := lengths(0)
	for i, d := range fixed {
		require.Equal(t, 10*time.Minute, d, "epoch %d: no max_epoch, no growth", i)
	}
	grown := lengths(time.Hour)
	for i, d := range grown[:8] {
		assert.Equal(t, 10*time.Minute, d, "epoch %d: the sweep and as long again at the epoch", i)
	}
	// The 16th epoch is the 12th after the sweep: 10m × √(12/4).
	assert.Equal(t, time.Duration(float64(10*time.Minute)*math.Sqrt(3)), grown[15])
	for i := 9; i < len(grown); i++ {
		assert.GreaterOrEqual(t, grown[i], grown[i-1], "epoch %d: they never shrink", i)
	}
	assert.Equal(t, time.Hour, grown[len(grown)-1], "capped at max_epoch, which 10m × √(k/4) reaches at the 144th after the sweep")
}

// TestLearningDeterministic: the same seed and the same outcomes post the
// same prices, to the second; another seed explores in another order.
func TestLearningDeterministic(t *testing.T) {
	run := func(seed uint64) []time.Duration {
		m := newLearnMarket(t, 4, 1, seed)
		m.run(2 * 24 * time.Hour)
		return m.levelTime
	}
	first := run(3)
	assert.Equal(t, first, run(3))
	assert.NotEqual(t, first, run(4))
}

// TestLearningStateRoundTrip: a learner restored from another's state
// believes what it did and draws on from the same random stream, so
// that it chooses as the other would have; the grid must match.
func TestLearningStateRoundTrip(t *testing.T) {
	m := newLearnMarket(t, 4, 1, 5)
	m.run(24 * time.Hour)
	data, err := m.l.State()
	require.NoError(t, err)

	cfg := m.l.Config()
	twin, err := NewLearning(cfg)
	require.NoError(t, err)
	require.NoError(t, twin.Restore(data))
	was, is := m.l.Beliefs(), twin.Beliefs()
	assert.Equal(t, fmt.Sprint(was.Levels), fmt.Sprint(is.Levels), "it believes what its predecessor did")
	again, err := twin.State()
	require.NoError(t, err)
	assert.JSONEq(t, string(data), string(again), "restore, then save: the same state")
	m.l.mu.Lock()
	want := m.l.choose()
	m.l.mu.Unlock()
	twin.mu.Lock()
	got := twin.choose()
	twin.mu.Unlock()
	assert.Equal(t, want, got, "the same beliefs and stream choose the same level")

	cfg.Levels = 5
	other, err := NewLearning(cfg)
	require.NoError(t, err)
	err = other.Restore(data)
	require.Error(t, err, "learned on another grid")
	assert.Equal(t, bourse.EInvalid, bourse.ErrorCode(err))
	assert.Zero(t, other.Epochs(), "a refused state leaves the learner as it was")
}

func FuzzLearningRestore(f *testing.F) {
	l, err := NewLearning(LearningConfig{Base: Posted{P: contract.Flat(dectest.D("0.001"))}, Levels: 3})
	require.NoError(f, err)
	good, err := l.State()
	require.NoError(f, err)
	f.Add(good)
	f.Add([]byte(`{"version":1}`))
	f.Add([]byte(`{"version":1,"multipliers":["0.5","1.414214","4"],"level":7,"epochs":1,"rng":"","levels":[],"pending":{}}`))
	f.Add([]byte(`not json`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fresh, err := NewLearning(l.Config())
		require.NoError(t, err)
		if err := fresh.Restore(data); err != nil {
			assert.Equal(t, bourse.EInvalid, bourse.ErrorCode(err))
			return
		}
		// Whatever it took back, it can say what it believes, choose,
		// and save it again to a state it takes back once more.
		b := fresh.Beliefs()
		require.Len(t, b.Levels, 3)
		fresh.Observe(Outcome{Kind: OutcomeTime, Now: now, GPUs: 4, Free: 4})
		saved, err := fresh.State()
		require.NoError(t, err)
		require.NoError(t, fresh.Restore(saved))
	})
}
