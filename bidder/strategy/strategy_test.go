package strategy

import (
	"strings"
	"testing"
	"testing/quick"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
)

var job = Job{Name: "train", Currency: "CRED", GPUs: 2, Runtime: 10 * time.Second,
	Utilization: decimal.RequireFromString("0.8"), Value: decimal.RequireFromString("0.05"), Scale: 2}

func TestTermsAreValid(t *testing.T) {
	scale := func(string) (int32, bool) { return 2, true }
	now := time.Now()
	for _, s := range []Strategy{Fixed{}, Cheapest{}, &Adaptive{}, Deadline{}, Going{Prices: prices{"CRED/any": "0.013"}}} {
		for rejected := range 12 {
			tm := s.Bid(job, rejected, now)
			tm.Client = "alice"
			require.NoError(t, contract.Validate(tm, scale), "%T after %d rejections", s, rejected)
			assert.Equal(t, 15*time.Second, tm.TimeLimit)
			assert.True(t, tm.Prepayment.Equal(contract.MaxCharge(tm, 2)), "the maximum charge")
		}
	}
}

// TestTermsRunTheJob: a job that names an image or a program is offered
// as that, not as a synthetic profile, which no container or process
// server would take.
func TestTermsRunTheJob(t *testing.T) {
	j := job
	j.Image, j.Args = "ghcr.io/acme/train:v1", []string{"--epochs=3"}
	tm := Fixed{}.Bid(j, 0, time.Now())
	assert.Equal(t, &contract.JobSpec{Image: "ghcr.io/acme/train:v1", Args: []string{"--epochs=3"}}, tm.Job)
	j = job
	j.Command = "/usr/bin/python3"
	assert.Equal(t, &contract.JobSpec{Command: "/usr/bin/python3"}, Fixed{}.Bid(j, 0, time.Now()).Job)
	j.Files = &contract.Files{Digest: "sha256:" + strings.Repeat("0", 64), Bytes: 10240}
	assert.Equal(t, j.Files, Fixed{}.Bid(j, 0, time.Now()).Job.Files, "with the client's files")
	assert.NotNil(t, Fixed{}.Bid(job, 0, time.Now()).Job.Profile, "a job without either stays synthetic")
}

func TestCheapestTakesCheapestAffordableCounter(t *testing.T) {
	now := time.Now()
	k := func(id, price string, gpus int, valid time.Duration) contract.Counter {
		tm := Fixed{}.Bid(job, 0, now)
		tm.GPUs = gpus
		tm.P = contract.Flat(decimal.RequireFromString(price))
		return contract.Counter{ID: id, Terms: tm, ValidUntil: now.Add(valid)}
	}
	counters := []contract.Counter{
		k("dear", "0.06", 2, time.Minute),   // above the value
		k("ok", "0.04", 2, time.Minute),     // the one
		k("ok2", "0.045", 2, time.Minute),   // dearer
		k("stale", "0.01", 2, -time.Second), // expired
		k("small", "0.01", 1, time.Minute),  // fewer GPUs than the job needs
	}
	got := Cheapest{}.Take(job, counters, now)
	require.NotNil(t, got)
	assert.Equal(t, "ok", got.ID)
	assert.Nil(t, Cheapest{}.Take(job, counters[:1], now))
	assert.Nil(t, Fixed{}.Take(job, counters, now))

	// The price compared is contract.Terms.FullUsePrice: P(g) + Q(g)/g per
	// GPU-second, exactly.
	withQ := func(id, p, q string) contract.Counter {
		k := k(id, p, 2, time.Minute)
		k.Terms.Q = contract.Flat(decimal.RequireFromString(q))
		return k
	}
	t.Run("CountsQ", func(t *testing.T) {
		// 0.04 + 0.03/2 = 0.055 is above the value 0.05, though P alone is not.
		assert.Nil(t, Cheapest{}.Take(job, []contract.Counter{withQ("q", "0.04", "0.03")}, now))
		// 0.03 + 0.012/2 = 0.036 is dearer than a flat 0.035.
		got := Cheapest{}.Take(job, []contract.Counter{withQ("q", "0.03", "0.012"), k("flat", "0.035", 2, time.Minute)}, now)
		require.NotNil(t, got)
		assert.Equal(t, "flat", got.ID)
	})
	t.Run("Exact", func(t *testing.T) {
		// P and Q ramps to 0.05 at 3 GPUs are 0.1/3 each at 2: the rate
		// 0.1/3 + 0.1/6 is 0.05, exactly the value, though neither part
		// has a finite decimal. It is taken, and ties with a flat 0.05
		// from server "b": the tie goes by server, whichever came first.
		thirds := k("thirds", "0", 2, time.Minute)
		thirds.Server = "a"
		thirds.Terms.P = contract.Ramp(decimal.Zero, decimal.NewFromInt(3), decimal.RequireFromString("0.05"))
		thirds.Terms.Q = thirds.Terms.P
		flat := k("flat", "0.05", 2, time.Minute)
		flat.Server = "b"
		for _, ks := range [][]contract.Counter{{thirds}, {thirds, flat}, {flat, thirds}} {
			got := Cheapest{}.Take(job, ks, now)
			require.NotNil(t, got)
			assert.Equal(t, "thirds", got.ID)
		}
	})
}

// TestCompareCounters is the one order of counter-offers: by price at
// full use, then server, then id, whatever order they came in; and the
// strategies take the first of it within the value.
func TestCompareCounters(t *testing.T) {
	now := time.Now()
	k := func(server, id, price string) contract.Counter {
		tm := Fixed{}.Bid(job, 0, now)
		tm.P = contract.Flat(decimal.RequireFromString(price))
		return contract.Counter{ID: id, Server: server, Terms: tm, ValidUntil: now.Add(time.Minute)}
	}
	want := []contract.Counter{k("z", "k9", "0.01"), k("a", "k2", "0.02"), k("a", "k3", "0.02"), k("b", "k1", "0.02"), k("a", "k0", "0.03")}
	check := func(ks []contract.Counter) bool {
		SortCounters(ks)
		for i := range ks {
			if ks[i].ID != want[i].ID {
				return false
			}
		}
		return true
	}
	require.NoError(t, quick.Check(func(perm []uint8) bool {
		ks := append([]contract.Counter(nil), want...)
		for i, p := range perm {
			j := int(p) % len(ks)
			ks[i%len(ks)], ks[j] = ks[j], ks[i%len(ks)]
		}
		first := Cheapest{}.Take(job, ks, now)
		return first != nil && first.ID == "k9" && check(ks)
	}, nil))
	ties := []contract.Counter{k("b", "k1", "0.02"), k("a", "k3", "0.02"), k("a", "k2", "0.02")}
	for _, s := range []Strategy{Cheapest{}, &Adaptive{}, Deadline{}, Going{}} {
		got := s.Take(job, ties, now)
		require.NotNil(t, got, "%T", s)
		assert.Equal(t, "k2", got.ID, "%T takes the first of the order", s)
	}
}

func TestAdaptiveRaisesAfterRejection(t *testing.T) {
	a := &Adaptive{}
	now := time.Now()
	price := func(rejected int) decimal.Decimal { return a.Bid(job, rejected, now).P.Eval(decimal.NewFromInt(1)) }
	p0, p1, p9 := price(0), price(1), price(9)
	assert.True(t, p1.GreaterThan(p0), "%s then %s", p0, p1)
	assert.True(t, p9.Equal(job.Value), "capped at the value: %s", p9)

	a.Observe(true, time.Millisecond)
	assert.True(t, price(0).LessThan(p0), "a quick acceptance lowers the opening bid")
	a.Observe(false, time.Second)
	a.Observe(false, time.Second)
	assert.True(t, price(0).GreaterThan(p0))
}

// TestNeverAboveValue checks every strategy's bids, whatever the
// rejections, the time and the deadline: never more than the job's value
// per GPU-second, at any rate of use.
func TestNeverAboveValue(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	check := func(rejected uint8, minutes int16, start uint16) bool {
		j := job
		j.Deadline = now.Add(time.Duration(minutes) * time.Minute)
		strategies := []Strategy{Fixed{}, Cheapest{Start: decimal.New(int64(start), -3)}, &Adaptive{},
			Deadline{Base: decimal.New(int64(start), -3), Window: time.Duration(start) * time.Second},
			Going{Prices: prices{"CRED/any": decimal.New(int64(start), -4).String()}}}
		for _, s := range strategies {
			p := s.Bid(j, int(rejected), now).P
			for _, x := range []string{"0", "1", "2", "100"} {
				if p.Eval(decimal.RequireFromString(x)).GreaterThan(j.Value) {
					t.Logf("%T bids %s after %d rejections", s, p.Eval(decimal.RequireFromString(x)), rejected)
					return false
				}
			}
			s.Observe(rejected%2 == 0, time.Duration(rejected)*time.Millisecond)
		}
		return true
	}
	require.NoError(t, quick.Check(check, nil))
}

func TestDeadline(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	j := job // runtime 10s
	j.Deadline = now.Add(10 * time.Minute)
	price := func(d Deadline, at time.Time) decimal.Decimal { return d.Bid(j, 0, at).P.Eval(decimal.Zero) }

	t.Run("Table", func(t *testing.T) {
		d := Deadline{Base: decimal.RequireFromString("0.2"), Window: 100 * time.Second}
		latest := j.Deadline.Add(-j.Runtime)
		for _, tt := range []struct {
			at   time.Time
			want string // of the value 0.05
		}{
			{now, "0.01"},                            // far off: the base
			{latest.Add(-100 * time.Second), "0.01"}, // the window opens
			{latest.Add(-50 * time.Second), "0.03"},  // half way: 0.2 + 0.8·0.5 = 0.6
			{latest.Add(-25 * time.Second), "0.04"},  // 0.2 + 0.8·0.75 = 0.8
			{latest, "0.05"},                         // the latest start: the value
			{j.Deadline.Add(time.Hour), "0.05"},      // late: still the value, never more
		} {
			assert.Equal(t, tt.want, price(d, tt.at).String(), "at %s", tt.at.Sub(latest))
		}
		j := j
		j.Deadline = time.Time{}
		assert.Equal(t, "0.01", d.Bid(j, 0, now).P.Eval(decimal.Zero).String(), "no deadline: the base")
	})

	t.Run("NonDecreasing", func(t *testing.T) {
		check := func(base uint16, window uint16, a, b uint32) bool {
			d := Deadline{Base: decimal.New(int64(base%1200), -3), Window: time.Duration(window) * time.Second}
			t1, t2 := now.Add(time.Duration(a%1200)*time.Second), now.Add(time.Duration(b%1200)*time.Second)
			if t2.Before(t1) {
				t1, t2 = t2, t1
			}
			return !price(d, t2).LessThan(price(d, t1))
		}
		require.NoError(t, quick.Check(check, nil))
	})

	t.Run("TakesCheapestWithinValue", func(t *testing.T) {
		k := func(id, p string) contract.Counter {
			tm := Fixed{}.Bid(j, 0, now)
			tm.P = contract.Flat(decimal.RequireFromString(p))
			return contract.Counter{ID: id, Terms: tm, ValidUntil: now.Add(time.Minute)}
		}
		got := Deadline{}.Take(j, []contract.Counter{k("dear", "0.06"), k("b", "0.045"), k("a", "0.04")}, now)
		require.NotNil(t, got)
		assert.Equal(t, "a", got.ID)
	})
}

// prices is market data by "currency/model".
type prices map[string]string

func (p prices) Median(cur, model string) (decimal.Decimal, bool) {
	s, ok := p[cur+"/"+model]
	if !ok {
		return decimal.Decimal{}, false
	}
	return decimal.RequireFromString(s), true
}

// TestGoing: the going rate opens at the market's median, within the
// value, and moves a quarter of the way to the value per rejection;
// without market data it opens at half the value.
func TestGoing(t *testing.T) {
	now := time.Now()
	price := func(s Strategy, j Job, rejected int) string {
		return s.Bid(j, rejected, now).P.Eval(decimal.Zero).String()
	}
	g := Going{Prices: prices{"CRED/any": "0.03", "CRED/H100": "0.09"}}
	assert.Equal(t, "0.03", price(g, job, 0), "the median")
	assert.Equal(t, "0.04", price(g, job, 2), "half way from 0.03 to the value 0.05")
	assert.Equal(t, "0.05", price(g, job, 9), "never past the value")
	h100 := job
	h100.Class.Model = "H100"
	assert.Equal(t, "0.05", price(g, h100, 0), "a median above the value bids the value")
	assert.Equal(t, "0.025", price(Going{}, job, 0), "no market data: half the value")
	assert.Equal(t, "0.025", price(Going{Prices: prices{}}, job, 0), "no contract of the kind: half the value")
}
