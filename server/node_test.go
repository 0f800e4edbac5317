package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/protocol"
)

// testNode is a node of four H100s on a clock the test moves, with
// counter ids that count.
type testNode struct {
	t   *testing.T
	now time.Time
	n   *Node
	ids int
}

func newTestNode(t *testing.T, policy Policy) *testNode {
	tn := &testNode{t: t, now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	var gpus []contract.GPU
	for i := range 4 {
		gpus = append(gpus, h100(i))
	}
	n, err := NewNode(NodeConfig{ID: "gpu1", Currency: currency.Currency{Code: "GPU", Scale: 2}, GPUs: gpus, Policy: policy,
		Runner: &Synthetic{Now: func() time.Time { return tn.now }}, ReadingEvery: time.Second, ClaimFor: 5 * time.Second,
		NewID:  func() string { tn.ids++; return fmt.Sprintf("k%d", tn.ids) },
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	tn.n = n
	return tn
}

func (tn *testNode) advance(d time.Duration) { tn.now = tn.now.Add(d) }

// job is terms for g H100s running a synthetic job of util for d, within
// limit, prepaying the maximum.
func job(g int, util string, d, limit time.Duration) contract.Terms {
	t := contract.Terms{Client: "alice", Currency: "GPU", GPUs: g, Class: contract.Class{Model: "h100"}, TimeLimit: limit,
		P: contract.Flat(dectest.D("0.002")), Job: &contract.JobSpec{Profile: &contract.Profile{Utilization: dectest.D(util), Duration: d}}}
	t.Prepayment = t.CappedPrepayment(2)
	return t
}

// start decides, starts and launches an offer as the exchange and a driver
// would, stopping what it preempts, and returns the finals of those.
func (tn *testNode) start(offer, id string, t contract.Terms) (protocol.Started, []contract.Reading) {
	tn.t.Helper()
	d := tn.n.Decide(tn.now, protocol.ServerOffer{Offer: offer, Terms: t})
	require.True(tn.t, d.Accept, "%+v", d)
	plan, err := tn.n.Start(tn.now, protocol.Start{Offer: offer, Contract: protocol.ContractView{ID: id, Client: t.Client, Server: "gpu1", Terms: t}})
	require.NoError(tn.t, err)
	if plan.Started != nil {
		return *plan.Started, nil
	}
	finals := tn.stop(plan.Stops)
	st, err := tn.n.Launch(context.Background(), tn.now, id)
	require.NoError(tn.t, err)
	return st, finals
}

// stop does a driver's part of stops: stop each job, then Stopped.
func (tn *testNode) stop(stops []Stop) []contract.Reading {
	tn.t.Helper()
	var finals []contract.Reading
	for _, s := range stops {
		require.NoError(tn.t, s.Job.Stop(context.Background(), s.Reason))
		rd, err := tn.n.Stopped(tn.now, s.Contract)
		require.NoError(tn.t, err)
		finals = append(finals, rd)
	}
	return finals
}

// run ticks every second for d and returns the readings and finals.
func (tn *testNode) run(d time.Duration) []contract.Reading {
	tn.t.Helper()
	var out []contract.Reading
	for end := tn.now.Add(d); tn.now.Before(end); {
		tn.advance(time.Second)
		due := tn.n.Tick(tn.now)
		out = append(out, due.Readings...)
		out = append(out, tn.stop(due.Stops)...)
		for _, id := range due.Launch {
			_, err := tn.n.Launch(context.Background(), tn.now, id)
			require.NoError(tn.t, err)
		}
	}
	return out
}

func TestNewNode(t *testing.T) {
	ok := NodeConfig{ID: "gpu1", Currency: currency.Currency{Code: "GPU", Scale: 2}, GPUs: []contract.GPU{h100(0)}, Runner: &Synthetic{}}
	_, err := NewNode(ok)
	require.NoError(t, err)
	for name, change := range map[string]func(*NodeConfig){
		"NoID":        func(c *NodeConfig) { c.ID = "" },
		"NoGPUs":      func(c *NodeConfig) { c.GPUs = nil },
		"RepeatedGPU": func(c *NodeConfig) { c.GPUs = []contract.GPU{h100(0), h100(0)} },
		// The node has no clock to give a default runner.
		"NoRunner": func(c *NodeConfig) { c.Runner = nil },
	} {
		t.Run(name, func(t *testing.T) {
			c := ok
			change(&c)
			_, err := NewNode(c)
			assert.Equal(t, bourse.EInvalid, bourse.ErrorCode(err), "%v", err)
		})
	}
}

func TestNodeRunsAJob(t *testing.T) {
	tn := newTestNode(t, Posted{})
	st, _ := tn.start("o1", "c1", job(2, "0.5", 3500*time.Millisecond, time.Minute))
	assert.Equal(t, []int{0, 1}, st.GPUs, "lowest indexes first; models match without case")
	assert.Equal(t, contract.MeterSynthetic, st.Meter, "the synthetic runner's jobs are measured by the synthetic meter")
	assert.Equal(t, 2, len(tn.n.Hello(tn.now).GPUs)-tn.n.Hello(tn.now).Free)

	rs := tn.run(5 * time.Second)
	require.Len(t, rs, 4, "three readings, then the final one: %+v", rs)
	for i, r := range rs[:3] {
		assert.Equal(t, uint64(i+1), r.Seq)
		assert.False(t, r.Final)
		assert.True(t, r.U.Equal(seconds(time.Duration(r.T))), "two GPUs half busy: U is the wall time")
	}
	final := rs[3]
	assert.True(t, final.Final)
	assert.Equal(t, uint64(4), final.Seq)
	assert.Equal(t, contract.ReasonCompleted, final.Reason)
	assert.Equal(t, 3500*time.Millisecond, time.Duration(final.T))
	assert.True(t, final.U.Equal(dectest.D("3.5")), "u %s", final.U)
	assert.Equal(t, 0, len(tn.n.Hello(tn.now).GPUs)-tn.n.Hello(tn.now).Free, "the GPUs are free again")

	t.Run("RepeatedStart", func(t *testing.T) {
		plan, err := tn.n.Start(tn.now, protocol.Start{Offer: "o1", Contract: protocol.ContractView{ID: "c1", Terms: job(2, "0.5", time.Second, time.Minute)}})
		require.NoError(t, err)
		require.NotNil(t, plan.Started)
		assert.Equal(t, st, *plan.Started)
	})
}

func TestNodeLimits(t *testing.T) {
	t.Run("TimeLimit", func(t *testing.T) {
		tn := newTestNode(t, Posted{})
		tm := job(1, "1", time.Hour, 3*time.Second)
		tm.P = contract.Flat(dectest.D("0.01"))
		tm.Prepayment = tm.CappedPrepayment(2)
		tn.start("o1", "c1", tm)
		rs := tn.run(5 * time.Second)
		final := rs[len(rs)-1]
		assert.Equal(t, contract.ReasonTimeLimit, final.Reason)
		assert.Equal(t, 3*time.Second, time.Duration(final.T))
	})
	t.Run("PrepaymentExhausted", func(t *testing.T) {
		tn := newTestNode(t, Posted{})
		tm := job(1, "1", time.Hour, time.Hour)
		tm.Prepayment = dectest.D("0.01") // five GPU-seconds at 0.002
		tn.start("o1", "c1", tm)
		rs := tn.run(10 * time.Second)
		final := rs[len(rs)-1]
		assert.Equal(t, contract.ReasonExhausted, final.Reason)
		assert.Equal(t, 5*time.Second, time.Duration(final.T))
	})
	t.Run("Killed", func(t *testing.T) {
		tn := newTestNode(t, Posted{})
		tn.start("o1", "c1", job(1, "1", time.Hour, time.Hour))
		tn.run(2 * time.Second)
		require.NoError(t, tn.n.Control(tn.now, "c1", contract.ReasonKilled))
		rs := tn.run(time.Second)
		require.Len(t, rs, 1)
		assert.Equal(t, contract.ReasonKilled, rs[0].Reason)
		assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(tn.n.Control(tn.now, "nope", contract.ReasonKilled)))
		assert.Equal(t, bourse.EInvalid, bourse.ErrorCode(tn.n.Control(tn.now, "c1", contract.ReasonCompleted)))
	})
}

func TestNodeClaims(t *testing.T) {
	t.Run("Lapse", func(t *testing.T) {
		tn := newTestNode(t, Posted{})
		d := tn.n.Decide(tn.now, protocol.ServerOffer{Offer: "o1", Terms: job(4, "1", time.Second, time.Minute)})
		require.True(t, d.Accept)
		assert.False(t, tn.n.Decide(tn.now, protocol.ServerOffer{Offer: "o2", Terms: job(1, "1", time.Second, time.Minute)}).Accept,
			"all four GPUs are claimed")
		tn.advance(5 * time.Second)
		assert.True(t, tn.n.Decide(tn.now, protocol.ServerOffer{Offer: "o2", Terms: job(1, "1", time.Second, time.Minute)}).Accept,
			"the claim lapsed after ClaimFor")
		tn.n.Cancel(tn.now, "o2")
		assert.Equal(t, 4, tn.n.Hello(tn.now).Free, "a cancel frees the claim")
	})
	t.Run("CounterHonoured", func(t *testing.T) {
		tn := newTestNode(t, Posted{P: contract.Flat(dectest.D("0.003"))})
		d := tn.n.Decide(tn.now, protocol.ServerOffer{Offer: "o1", Terms: job(1, "1", time.Second, time.Minute)})
		require.False(t, d.Accept)
		require.Len(t, d.Counters, 1)
		k := d.Counters[0]
		assert.Equal(t, "k1", k.ID, "ids from the node's source")
		assert.True(t, k.Terms.P.Equal(contract.Flat(dectest.D("0.003"))))
		tn.advance(time.Second)
		d = tn.n.Decide(tn.now, protocol.ServerOffer{Offer: "o2", Terms: k.Terms, Counter: k.ID})
		assert.True(t, d.Accept, "%+v", d)
	})
	t.Run("CounterHonouredWhenPricesRise", func(t *testing.T) {
		// Half a busy server costs half as much again: the counter made on
		// an idle one is below the price of the moment, and honoured.
		tn := newTestNode(t, Utilization{Base: Posted{P: contract.Flat(dectest.D("0.002"))}, K: dectest.D("1")})
		cheap := job(1, "1", time.Hour, time.Hour)
		cheap.P = contract.Flat(dectest.D("0.001"))
		cheap.Prepayment = cheap.CappedPrepayment(2)
		d := tn.n.Decide(tn.now, protocol.ServerOffer{Offer: "o1", Terms: cheap})
		require.Len(t, d.Counters, 1)
		k := d.Counters[0]
		require.True(t, k.Terms.P.Equal(contract.Flat(dectest.D("0.002"))), "%v", k.Terms.P)

		dear := job(2, "1", time.Hour, time.Hour)
		dear.P = contract.Flat(dectest.D("0.004"))
		dear.Prepayment = dear.CappedPrepayment(2)
		tn.start("o2", "c2", dear)
		tn.advance(time.Second)
		fresh := tn.n.Decide(tn.now, protocol.ServerOffer{Offer: "o3", Terms: k.Terms})
		require.False(t, fresh.Accept, "without the counter the price is now 0.003")
		require.Len(t, fresh.Counters, 1)
		assert.True(t, fresh.Counters[0].Terms.P.Equal(contract.Flat(dectest.D("0.003"))), "%v", fresh.Counters[0].Terms.P)
		assert.True(t, tn.n.Decide(tn.now, protocol.ServerOffer{Offer: "o4", Terms: k.Terms, Counter: k.ID}).Accept,
			"the counter is honoured at its own price")
		tn.n.Cancel(tn.now, "o4")

		tn.now = k.ValidUntil
		assert.False(t, tn.n.Decide(tn.now, protocol.ServerOffer{Offer: "o5", Terms: k.Terms, Counter: k.ID}).Accept,
			"a lapsed counter is an offer like any other")
	})
}

func TestNodePreempts(t *testing.T) {
	tn := newTestNode(t, Preempting{Base: Posted{}})
	cheap := job(4, "1", time.Hour, time.Hour)
	cheap.Preemptible, cheap.P = true, contract.Flat(dectest.D("0.001"))
	cheap.Prepayment = cheap.CappedPrepayment(2)
	tn.start("o1", "low", cheap)
	tn.run(2 * time.Second)
	st, finals := tn.start("o2", "high", job(2, "1", time.Hour, time.Hour))
	require.Len(t, finals, 1)
	assert.Equal(t, "low", finals[0].Contract)
	assert.Equal(t, contract.ReasonPreempted, finals[0].Reason)
	assert.Equal(t, []int{0, 1}, st.GPUs)
	assert.Equal(t, 2, tn.n.Hello(tn.now).Free, "the preempted job's other GPUs are free")
}

func TestNodeBookings(t *testing.T) {
	tn := newTestNode(t, Bookings{Base: Posted{}})
	tm := job(2, "1", 2*time.Second, time.Hour)
	tm.StartAt = tn.now.Add(10 * time.Second)
	st, _ := tn.start("o1", "c1", tm)
	assert.True(t, st.Booked)
	assert.Equal(t, tm.StartAt, st.At)
	assert.Empty(t, tn.run(9*time.Second), "nothing before its slot")
	due := tn.n.Tick(tn.now.Add(time.Second))
	tn.advance(time.Second)
	require.Equal(t, []string{"c1"}, due.Launch)
	started, err := tn.n.Launch(context.Background(), tn.now, "c1")
	require.NoError(t, err)
	assert.False(t, started.Booked)
	assert.Equal(t, tm.StartAt, started.At)
	rs := tn.run(4 * time.Second)
	assert.Equal(t, contract.ReasonCompleted, rs[len(rs)-1].Reason)
}

// TestNodeDeterministic: the same calls at the same times give the same
// readings, byte for byte.
func TestNodeDeterministic(t *testing.T) {
	once := func() string {
		tn := newTestNode(t, Preempting{Base: Posted{P: contract.Flat(dectest.D("0.0015"))}})
		var b strings.Builder
		for i := range 12 {
			tm := job(1+i%3, "0.75", time.Duration(1+i%5)*time.Second, time.Minute)
			tm.Preemptible = i%4 == 0
			d := tn.n.Decide(tn.now, protocol.ServerOffer{Offer: fmt.Sprint("o", i), Terms: tm})
			js, _ := json.Marshal(d)
			b.Write(js)
			if d.Accept {
				plan, err := tn.n.Start(tn.now, protocol.Start{Offer: fmt.Sprint("o", i), Contract: protocol.ContractView{ID: fmt.Sprint("c", i), Terms: tm}})
				if err == nil {
					for _, r := range tn.stop(plan.Stops) {
						fmt.Fprintln(&b, "preempted", r.Contract)
					}
					_, err = tn.n.Launch(context.Background(), tn.now, fmt.Sprint("c", i))
				}
				fmt.Fprintln(&b, err)
			}
			js, _ = json.Marshal(tn.run(time.Second))
			b.Write(js)
		}
		js, _ := json.Marshal(tn.run(10 * time.Second))
		b.Write(js)
		return b.String()
	}
	assert.Equal(t, once(), once())
}

// TestLinksNoNATS: the node and its policies are the simulator's too; they
// must not drag NATS in.
func TestLinksNoNATS(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	require.NoError(t, err)
	for _, dep := range strings.Fields(string(out)) {
		assert.False(t, strings.HasPrefix(dep, "github.com/nats-io/"), "package server links %s", dep)
	}
}

// TestSyntheticRefusesPrograms: a node with the synthetic runner, which
// runs no program, refuses an offer that names one, with a code that
// says why (it once took it, ran nothing and charged for the time), and
// says in its hello that it runs synthetic jobs only.
func TestSyntheticRefusesPrograms(t *testing.T) {
	tn := newTestNode(t, Posted{})
	t.Run("Program", func(t *testing.T) {
		tm := job(1, "1", time.Second, time.Minute)
		tm.Job = &pythonJob
		d := tn.n.Decide(tn.now, protocol.ServerOffer{Offer: "o1", Terms: tm})
		assert.False(t, d.Accept)
		assert.Equal(t, bourse.EJobUnsupported, d.Code)
		assert.Contains(t, d.Reason, "this server runs synthetic jobs only")
	})
	t.Run("ProgramAndProfile", func(t *testing.T) {
		tm := job(1, "1", time.Second, time.Minute)
		p := pythonJob
		p.Profile = tm.Job.Profile
		tm.Job = &p
		d := tn.n.Decide(tn.now, protocol.ServerOffer{Offer: "o2", Terms: tm})
		assert.Equal(t, bourse.EJobUnsupported, d.Code, "a profile does not make the program run")
	})
	t.Run("Profile", func(t *testing.T) {
		assert.True(t, tn.n.Decide(tn.now, protocol.ServerOffer{Offer: "o3", Terms: job(1, "1", time.Second, time.Minute)}).Accept)
	})
	h := tn.n.Hello(tn.now)
	require.NotNil(t, h.Runs)
	assert.Equal(t, protocol.Runs{Runner: protocol.RunnerSynthetic, Meter: contract.MeterSynthetic}, *h.Runs)
}

// pythonJob is a job that runs a program.
var pythonJob = contract.JobSpec{Command: "/usr/bin/python3", Args: []string{"train.py"}}

// slotted is a synthetic runner whose jobs each need one of a few slots
// (as the process runner's need a job user of its pool).
type slotted struct {
	Synthetic
	free int
}

func (s *slotted) FreeSlots() (int, bool) { return s.free, true }

// TestNoSlotNoRoom: GPUs free with no job slot to run a job on them (every
// job user busy, or kept from jobs for what one left) are no room: the
// hello and the ask say none free, and an offer that fits the GPUs is
// refused rather than accepted and then not started. Once a slot frees,
// the GPUs are offered again; an accept's claim takes its slot.
func TestNoSlotNoRoom(t *testing.T) {
	tn := newTestNode(t, Posted{})
	r := &slotted{Synthetic: Synthetic{Now: func() time.Time { return tn.now }}}
	tn.n.runner = r
	h := tn.n.Hello(tn.now)
	assert.Equal(t, 0, h.Free, "4 GPUs free, but no job slot")
	for _, c := range h.Ask.Classes {
		assert.Zero(t, c.Free, "the ask offers %s", c.Model)
	}
	d := tn.n.Decide(tn.now, protocol.ServerOffer{Offer: "o1", Terms: job(1, "1", time.Minute, time.Hour)})
	assert.False(t, d.Accept, "accepted with no slot to run it")

	r.free = 1
	assert.Equal(t, 4, tn.n.Hello(tn.now).Free)
	d = tn.n.Decide(tn.now, protocol.ServerOffer{Offer: "o2", Terms: job(1, "1", time.Minute, time.Hour)})
	require.True(t, d.Accept, "%+v", d)
	assert.Equal(t, 0, tn.n.Hello(tn.now).Free, "the claim took the one slot")
	d = tn.n.Decide(tn.now, protocol.ServerOffer{Offer: "o3", Terms: job(1, "1", time.Minute, time.Hour)})
	assert.False(t, d.Accept, "a second accept for one slot")
}

// TestModelOf: what a contract sold is the model of the GPUs it got,
// models joined by + in order where they differ.
func TestModelOf(t *testing.T) {
	for _, tc := range []struct {
		gpus []contract.GPU
		want string
	}{
		{nil, ""},
		{[]contract.GPU{{Index: 0, Model: "H100"}, {Index: 1, Model: "H100"}}, "H100"},
		{[]contract.GPU{{Index: 0, Model: "L4"}, {Index: 1, Model: "H100"}, {Index: 2, Model: "L4"}}, "L4+H100"},
	} {
		if got := modelOf(tc.gpus); got != tc.want {
			t.Errorf("modelOf(%v) = %q, want %q", tc.gpus, got, tc.want)
		}
	}
}
