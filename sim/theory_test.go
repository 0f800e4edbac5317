package sim_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/bidder/strategy"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/scenario"
	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/sim"
	"github.com/bourse/bourse/sim/workload"
)

// settledCharges runs the market and returns the sum of its contracts'
// charges, exactly, with the run's result.
func settledCharges(t *testing.T, cfg sim.Config) (decimal.Decimal, []contract.Contract) {
	t.Helper()
	m, err := sim.New(cfg)
	require.NoError(t, err)
	r, err := m.Run(context.Background())
	require.NoError(t, err)
	cs, err := m.Contracts(context.Background())
	require.NoError(t, err)
	sum := decimal.Zero
	for _, c := range cs {
		require.Equal(t, contract.StateSettled, c.State, "%s", c.ID)
		sum = sum.Add(c.Charge)
	}
	rep, err := m.Store().Ledger().Audit(context.Background())
	require.NoError(t, err)
	require.True(t, rep.OK(), "%s", rep)
	assert.InDelta(t, sum.InexactFloat64(), r.Summary.Revenue, 1e-6, "the result's revenue is the ledger's")
	return sum, cs
}

// TestTheoryPostedRevenue: a posted price with fixed demand that the
// servers can always take earns exactly price × the GPU-seconds the jobs
// use, to the cent: Σ p·g·u·d over the jobs.
func TestTheoryPostedRevenue(t *testing.T) {
	price := dectest.D("0.25")
	var jobs []workload.Job
	want := decimal.Zero
	for i := range 200 {
		g, util, run := 1+i%4, []float64{1, 0.5, 0.75, 0.25}[i%4], time.Duration(30+i)*time.Second
		jobs = append(jobs, workload.Job{ID: fmt.Sprint(i), Client: []string{"ada", "bea"}[i%2], Arrival: time.Duration(i) * 10 * time.Second,
			GPUs: g, Duration: run, Utilization: util})
		u := decimal.NewFromInt(int64(g)).Mul(decimal.NewFromFloat(util)).Mul(decimal.NewFromInt(int64(run / time.Second)))
		want = want.Add(u.Mul(price))
	}
	clients := []scenario.ClientSpec{
		{ID: "ada", Budget: dectest.D("1000000"), Value: price, Strategy: strategy.Fixed{}},
		{ID: "bea", Budget: dectest.D("1000000"), Value: price, Strategy: strategy.Fixed{}},
	}
	servers := []scenario.ServerSpec{{ID: "big", Model: "H100", Count: 64, Policy: server.Posted{P: contract.Flat(price)}}}
	got, cs := settledCharges(t, sim.Config{Servers: servers, Clients: clients, Workload: &jobList{jobs: jobs}})
	assert.Len(t, cs, len(jobs), "every job ran once")
	assert.True(t, want.Equal(got), "revenue %s, want exactly %s", got, want)
}

// TestTheoryUniformPrice: sanity vectors, each a job alone on a server
// whose posted curve is the client's bid too, charged Costello's
// U·P(U/T) as worked by hand.
func TestTheoryUniformPrice(t *testing.T) {
	ramp := contract.Ramp(dectest.D("0.5"), dectest.D("4"), dectest.D("0.16")) // 0 below 0.5 busy GPUs, 0.16 from 4
	for _, tc := range []struct {
		name   string
		p      contract.Curve
		gpus   int
		util   float64
		run    time.Duration
		charge string // U·P(U/T), by hand
	}{
		{"flat, full use: U = 200", contract.Flat(dectest.D("0.30")), 2, 1, 100 * time.Second, "60.00"},
		{"flat, half use: U = 100", contract.Flat(dectest.D("0.30")), 2, 0.5, 100 * time.Second, "30.00"},
		{"ramp at its top: r = 4, U = 240", ramp, 4, 1, 60 * time.Second, "38.40"},
		{"ramp partway: r = 2, U = 120, P = 0.16·1.5/3.5", ramp, 4, 0.5, 60 * time.Second, "8.22"},
		{"ramp at its foot: r = 0.5, P = 0", ramp, 1, 0.5, 60 * time.Second, "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := scenario.ClientSpec{ID: "ada", Budget: dectest.D("1000"), Value: dectest.D("1"), Strategy: bidCurve{tc.p}}
			servers := []scenario.ServerSpec{{ID: "s", Model: "H100", Count: 8, Policy: server.Posted{P: tc.p}}}
			job := workload.Job{ID: "j", Client: "ada", GPUs: tc.gpus, Duration: tc.run, Utilization: tc.util}
			got, cs := settledCharges(t, sim.Config{Servers: servers, Clients: []scenario.ClientSpec{client}, Workload: &jobList{jobs: []workload.Job{job}}})
			require.Len(t, cs, 1)
			assert.Equal(t, contract.ReasonCompleted, cs[0].Reason)
			assert.True(t, dectest.D(tc.charge).Equal(got), "charged %s, want %s", got, tc.charge)
		})
	}
}

// bidCurve bids a price curve as it is.
type bidCurve struct{ p contract.Curve }

func (b bidCurve) Bid(j strategy.Job, _ int, _ time.Time) contract.Terms {
	t := contract.Terms{Currency: j.Currency, GPUs: j.GPUs, Class: j.Class, TimeLimit: 2 * j.Runtime, P: b.p,
		Job: &contract.JobSpec{Profile: &contract.Profile{Utilization: j.Utilization, Duration: j.Runtime}}}
	t.Prepayment = t.CappedPrepayment(j.Scale)
	return t
}
func (bidCurve) Take(strategy.Job, []contract.Counter, time.Time) *contract.Counter { return nil }
func (bidCurve) Observe(bool, time.Duration)                                        {}

// TestTheoryProportionalShare is Spawn's and Tycoon's result: when every
// client pays one price per GPU-second and wants more GPU time than its
// money buys, each ends up with GPU time in proportion to its funding,
// here within 5% (what is left unspent is less than one job's prepayment).
func TestTheoryProportionalShare(t *testing.T) {
	price := dectest.D("0.01")
	budgets := map[string]string{"ada": "100", "bea": "200", "cyd": "300", "dov": "400"}
	ids := []string{"ada", "bea", "cyd", "dov"}
	var clients []scenario.ClientSpec
	for _, id := range ids {
		clients = append(clients, scenario.ClientSpec{ID: id, Budget: dectest.D(budgets[id]), Value: price, Strategy: strategy.Fixed{}, Patience: 12 * time.Hour})
	}
	var jobs []workload.Job
	for i := range 4 * 1000 { // 1,000 jobs of 60 GPU-seconds each: more than any budget buys
		jobs = append(jobs, workload.Job{ID: fmt.Sprint(i), Client: ids[i%4], Arrival: time.Duration(i) * time.Second,
			GPUs: 1, Duration: time.Minute, Utilization: 1})
	}
	servers := []scenario.ServerSpec{{ID: "s", Model: "H100", Count: 8, Policy: server.Posted{P: contract.Flat(price)}}}
	m, err := sim.New(sim.Config{Servers: servers, Clients: clients, Workload: &jobList{jobs: jobs}})
	require.NoError(t, err)
	r, err := m.Run(context.Background())
	require.NoError(t, err)
	var total, funding float64
	for _, c := range r.Clients {
		total += c.GPUSeconds
		funding += c.Funding
	}
	for _, c := range r.Clients {
		share, want := c.GPUSeconds/total, c.Funding/funding
		t.Logf("%s: funding %.0f%%, GPU time %.2f%%", c.ID, 100*want, 100*share)
		assert.InEpsilon(t, want, share, 0.05, "%s", c.ID)
	}
	assert.InDelta(t, 1, r.Summary.JainFunding, 0.01, "GPU-seconds per unit of funding are even")
	assert.Greater(t, r.Summary.WaitP50, 600.0, "jobs queued: the GPUs were contended")
	assert.InDelta(t, 1, r.Series[0].Utilization, 0.01, "and busy while the money lasted")
}

// TestTheoryAllowance is seed 003's allowance in a running market: wallets
// paid dx/dt = a − b·x by the ledger's own rules (currency/allowance)
// tend to a/b, from below or above, within 1% after ten half-lives, and
// with a = 0 a balance decays by half every ln2/b, while another client
// trades beside them.
func TestTheoryAllowance(t *testing.T) {
	allow := func(a, b string) *scenario.Allowance { return &scenario.Allowance{A: dectest.D(a), B: dectest.D(b)} }
	clients := []scenario.ClientSpec{
		{ID: "worker", Budget: dectest.D("1000"), Value: dectest.D("0.01"), Strategy: strategy.Fixed{}},
		{ID: "rising", Value: dectest.D("0.01"), Strategy: strategy.Fixed{}, Allowance: allow("10", "0.1")},                                   // 0 → 100, half-life 6.9 h
		{ID: "falling", Budget: dectest.D("500"), Value: dectest.D("0.01"), Strategy: strategy.Fixed{}, Allowance: allow("2", "0.05")},        // 500 → 40, half-life 13.9 h
		{ID: "decaying", Budget: dectest.D("1000"), Value: dectest.D("0.01"), Strategy: strategy.Fixed{}, Allowance: allow("0", "0.0288811")}, // halves daily
	}
	jobs := []workload.Job{
		{ID: "first", Client: "worker", GPUs: 1, Duration: time.Minute, Utilization: 1},
		{ID: "last", Client: "worker", Arrival: 150 * time.Hour, GPUs: 1, Duration: time.Minute, Utilization: 1},
	}
	servers := []scenario.ServerSpec{{ID: "s", Model: "H100", Count: 1, Policy: server.Posted{P: contract.Flat(dectest.D("0.01"))}}}
	m, err := sim.New(sim.Config{Servers: servers, Clients: clients, Workload: &jobList{jobs: jobs}, Forget: time.Hour})
	require.NoError(t, err)
	_, err = m.Run(context.Background())
	require.NoError(t, err)
	l := m.Store().Ledger()
	bal := func(id string) float64 {
		b, err := l.Balance(context.Background(), currency.WalletID(scenario.Currency.Code, id))
		require.NoError(t, err)
		return b.Available.InexactFloat64()
	}
	elapsed := m.Engine().Now().Sub(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	require.Greater(t, elapsed, 150*time.Hour)
	assert.InEpsilon(t, 100, bal("rising"), 0.01, "a/b from below")
	assert.InEpsilon(t, 40, bal("falling"), 0.01, "a/b from above")
	assert.Less(t, bal("decaying"), 1000*math.Pow(0.5, 6), "six days: six halvings or more")
	rep, err := l.Audit(context.Background())
	require.NoError(t, err)
	assert.True(t, rep.OK(), "%s", rep)
	t.Logf("after %v: rising %.2f, falling %.2f, decaying %.2f", elapsed, bal("rising"), bal("falling"), bal("decaying"))
}
