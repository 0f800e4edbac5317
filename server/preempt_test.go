package server

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/internal/dectest"
)

// running is a contract on the given GPUs at price per GPU-second,
// preemptible or not, started ago before now.
func running(id string, preemptible bool, price string, ago time.Duration, gpus ...int) Run {
	return Run{ID: id, GPUs: gpus, Started: now.Add(-ago), Terms: contract.Terms{
		Client: "bob", Currency: "GPU", GPUs: len(gpus), Class: contract.Class{Model: "H100"},
		TimeLimit: time.Hour, Prepayment: dectest.D("1"), P: contract.Flat(dectest.D(price)), Preemptible: preemptible,
	}}
}

func TestPreemptingDecide(t *testing.T) {
	base := Posted{P: contract.Flat(dectest.D("0.001")), MaxTimeLimit: time.Hour}
	policy := Preempting{Base: base}
	with := func(f func(*contract.Terms)) contract.Terms { o := offer(); f(&o); return o }
	busy := func(runs ...Run) View {
		var idx []int
		for _, r := range runs {
			idx = append(idx, r.GPUs...)
		}
		st := testView(idx...)
		st.Running = runs
		return st
	}
	for _, tc := range []struct {
		name    string
		offer   contract.Terms
		st      View
		accept  bool
		preempt []string
		counter bool
	}{
		{name: "free GPUs: no preemption", offer: offer(), st: busy(running("p1", true, "0.0001", time.Minute, 0, 1)),
			accept: true},
		{name: "preempts the cheaper", offer: offer(), accept: true, preempt: []string{"p1"},
			st: busy(running("p1", true, "0.0005", time.Minute, 0, 1), running("p2", true, "0.001", time.Minute, 2, 3))},
		{name: "claimed GPUs are not preempted", offer: offer(),
			st: busy(running("g", false, "0.001", time.Minute, 0, 1), running("p1", true, "0.0005", time.Minute, 3)).without(2),
			// GPU 2 is claimed for an offer.
		},
		{name: "one GPU short, one free", offer: offer(), accept: true, preempt: []string{"p1"},
			st: busy(running("g", false, "0.001", time.Minute, 0, 1), running("p1", true, "0.0005", time.Minute, 2))},
		{name: "latest started first", offer: with(func(o *contract.Terms) { o.GPUs, o.Prepayment = 1, dectest.D("3.60") }),
			accept: true, preempt: []string{"p2"},
			st: busy(running("p1", true, "0.0005", time.Hour, 0, 1), running("p2", true, "0.0005", time.Minute, 2, 3))},
		{name: "fewest GPUs first", offer: with(func(o *contract.Terms) { o.GPUs, o.Prepayment = 1, dectest.D("3.60") }),
			accept: true, preempt: []string{"p1"},
			st: busy(running("p2", true, "0.0005", time.Hour, 0, 1, 2), running("p1", true, "0.0005", time.Minute, 3))},
		{name: "several", offer: with(func(o *contract.Terms) { o.GPUs, o.Prepayment = 3, dectest.D("10.80") }),
			accept: true, preempt: []string{"p1", "p2"},
			st: busy(running("p1", true, "0.0001", time.Minute, 0), running("p2", true, "0.0002", time.Minute, 1, 2),
				running("p3", true, "0.0003", time.Minute, 3))},
		{name: "equal price is not more", offer: offer(),
			st: busy(running("p1", true, "0.002", time.Minute, 0, 1, 2, 3))},
		{name: "a q term counts", offer: offer(),
			st: busy(func() Run {
				r := running("p1", true, "0.001", time.Minute, 0, 1, 2, 3)
				r.Terms.Q = contract.Flat(dectest.D("0.004")) // 0.001 + 0.004/4 = 0.002 per GPU
				return r
			}())},
		{name: "guaranteed runs are not preempted", offer: offer(),
			st: busy(running("g", false, "0.0001", time.Minute, 0, 1, 2, 3))},
		{name: "a preemptible offer preempts nothing", offer: with(func(o *contract.Terms) { o.Preemptible = true }),
			st: busy(running("p1", true, "0.0001", time.Minute, 0, 1, 2, 3))},
		{name: "other class", offer: with(func(o *contract.Terms) { o.Class.Model = "A100" }),
			st: busy(running("p1", true, "0.0001", time.Minute, 0, 1, 2, 3)).with(4, 5), counter: false},
		{name: "not enough preemptible", offer: with(func(o *contract.Terms) { o.GPUs, o.Prepayment = 3, dectest.D("10.80") }),
			st: busy(running("g", false, "0.001", time.Minute, 0, 1), running("p1", true, "0.0001", time.Minute, 2, 3))},
		{name: "too cheap for the base", offer: with(func(o *contract.Terms) { o.P, o.Prepayment = contract.Flat(dectest.D("0.0008")), dectest.D("2.88") }),
			st: busy(running("p1", true, "0.0001", time.Minute, 0, 1, 2, 3))},
		{name: "too long for the base: the base's counter", offer: with(func(o *contract.Terms) { o.TimeLimit, o.Prepayment = 2*time.Hour, dectest.D("14.40") }),
			st: busy(running("p1", true, "0.0001", time.Minute, 0, 1, 2)), counter: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := policy.Decide(tc.offer, tc.st)
			assert.Equal(t, tc.accept, got.Accept, got.Reason)
			assert.Equal(t, tc.preempt, got.Preempt)
			if !tc.accept {
				assert.NotEmpty(t, got.Reason)
				assert.Equal(t, tc.counter, len(got.Counters) > 0, "counters %+v", got.Counters)
			}
		})
	}
}

// without marks GPU i busy with no run: a claim.
func (st View) without(i int) View {
	st.Free = slices.DeleteFunc(slices.Clone(st.Free), func(g contract.GPU) bool { return g.Index == i })
	return st
}

// with marks more GPUs busy with no run.
func (st View) with(is ...int) View {
	for _, i := range is {
		st = st.without(i)
	}
	return st
}

func TestPreemptingUtilization(t *testing.T) {
	// Utilization prices the server as it will be once the preempted job
	// stops: the offer pays that price, not the full server's.
	u := Utilization{Base: Posted{P: contract.Flat(dectest.D("0.001"))}, K: dectest.D("1")}
	st := testView(0, 1, 2, 3)
	st.Running = []Run{running("p1", true, "0.0001", time.Minute, 0, 1, 2, 3)}
	o := offer() // 0.0012: less than the busy server's 0.001·(1 + 4/6), more than the idle one's
	o.P = contract.Flat(dectest.D("0.0012"))
	o.Prepayment = dectest.D("1")
	assert.False(t, u.Decide(o, st).Accept)
	got := Preempting{Base: u}.Decide(o, st)
	assert.True(t, got.Accept, got.Reason)
	assert.Equal(t, []string{"p1"}, got.Preempt)
}

func TestPreemptingValidate(t *testing.T) {
	assert.Error(t, Preempting{}.Validate())
	assert.NoError(t, Preempting{Base: Posted{}}.Validate())
	assert.Error(t, Preempting{Base: Posted{MaxTimeLimit: -1}}.Validate())
	assert.Equal(t, "preempting reserve", Preempting{Base: Posted{}}.String())
}
