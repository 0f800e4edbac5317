package canary_test

import (
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/canary"
	"github.com/bourse/bourse/contract"
)

func d(s string) decimal.Decimal { return decimal.RequireFromString(s) }

var t0 = time.Date(2026, 12, 3, 4, 0, 0, 0, time.UTC)

// settled is a contract of 2 GPUs at 0.01 a GPU-second, settled for
// reason on a reading of u GPU-seconds over t, its charge what the
// terms ask for that.
func settled(reason contract.Reason, u string, t time.Duration) contract.Contract {
	terms := contract.Terms{Client: "c7", Currency: "CRED", GPUs: 2, TimeLimit: 3 * time.Minute, P: contract.Flat(d("0.01")), Server: "gpu1"}
	terms.Prepayment = terms.CappedPrepayment(2)
	c := contract.Contract{ID: "c-1", Client: "c7", Server: "gpu1", Terms: terms, State: contract.StateSettled, Reason: reason, Meter: contract.MeterSynthetic,
		Reading: &contract.Reading{Contract: "c-1", Seq: 3, U: d(u), T: contract.Duration(t), S: d("2"), Final: true, Reason: reason}}
	s, err := contract.Charge(terms, c.Reading.Usage(), 2)
	if err != nil {
		panic(err)
	}
	c.Charge, c.Refund = s.Charge, s.Refund
	return c
}

// TestJudge: by hand, a job of 2 GPUs each busy half of 60 s uses 60
// GPU-seconds and costs 0.60 at 0.01.
func TestJudge(t *testing.T) {
	truth := canary.Truth{Utilization: d("0.5"), Duration: contract.Duration(time.Minute), Tolerance: d("0.05")}
	minute := time.Minute
	for _, tt := range []struct {
		name      string
		c         contract.Contract
		truth     canary.Truth
		verdict   canary.Verdict
		deviation string
		expectedU string
		charge    string // expected charge
		why       string
	}{
		{"Honest", settled(contract.ReasonCompleted, "60", minute), truth, canary.Passed, "0", "60", "0.6", "within ±5%"},
		{"WithinTolerance", settled(contract.ReasonCompleted, "62.5", minute), truth, canary.Passed, "0.0417", "60", "0.6", "+4.17%"},
		{"OverReports", settled(contract.ReasonCompleted, "90", minute), truth, canary.Failed, "0.5", "60", "0.6", "+50%, beyond ±5%"},
		{"UnderReports", settled(contract.ReasonCompleted, "30", minute), truth, canary.Failed, "-0.5", "60", "0.6", "-50%"},
		{"TimeLimit", settled(contract.ReasonTimeLimit, "90", 3*minute), truth, canary.Failed, "0.5", "60", "0.6", "U 90 GPU-s"},
		{"Exhausted", settled(contract.ReasonExhausted, "60", minute), truth, canary.Passed, "0", "60", "0.6", ""},
		{"Lost", settled(contract.ReasonServerLost, "20", 20*time.Second), truth, canary.Inconclusive, "0", "0", "0", "settled server_lost"},
		{"Expired", settled(contract.ReasonExpired, "60", minute), truth, canary.Inconclusive, "0", "0", "0", "settled expired"},
		{"Killed", settled(contract.ReasonKilled, "10", 10*time.Second), truth, canary.Inconclusive, "0", "0", "0", "settled killed"},
		{"Shutdown", settled(contract.ReasonShutdown, "10", 10*time.Second), truth, canary.Inconclusive, "0", "0", "0", "settled shutdown"},
		{"Failed", settled(contract.ReasonFailed, "0", 0), truth, canary.Inconclusive, "0", "0", "0", "settled failed"},
		{"Voided", func() contract.Contract {
			c := settled(contract.ReasonNotStarted, "0", 0)
			c.State, c.Reading, c.Charge = contract.StateVoided, nil, decimal.Zero
			return c
		}(), truth, canary.Inconclusive, "0", "0", "0", "voided (not_started)"},
		{"Running", func() contract.Contract {
			c := settled("", "30", 30*time.Second)
			c.State = contract.StateRunning
			return c
		}(), truth, canary.Inconclusive, "0", "0", "0", "still running when judged"},
		// Stopped by its own terms before the job's end, whatever the
		// meter: a time limit shorter than the job (a fair-use
		// server's counter), a prepayment less than its use costs.
		{"TimeLimitShorterThanJob", func() contract.Contract {
			c := settled(contract.ReasonTimeLimit, "30", 30*time.Second)
			c.Terms.TimeLimit = 30 * time.Second
			return c
		}(), truth, canary.Inconclusive, "0", "0", "0", "its time limit 30s is shorter than the job's 1m0s"},
		{"ExhaustedShortPrepayment", func() contract.Contract {
			c := settled(contract.ReasonExhausted, "30", 30*time.Second)
			c.Terms.Prepayment = d("0.30")
			return c
		}(), truth, canary.Inconclusive, "0", "0", "0", "its prepayment 0.3 does not cover the job's use (0.6)"},
		{"ExhaustedByALie", func() contract.Contract {
			c := settled(contract.ReasonExhausted, "90", 45*time.Second)
			c.Terms.Prepayment, c.Charge = d("0.90"), d("0.90")
			return c
		}(), truth, canary.Failed, "0.5", "60", "0.6", "U 90 GPU-s where the job used 60"},
		// Of unknown length, the truth is its rate over the time it ran.
		{"RateOnly", settled(contract.ReasonCompleted, "45", 45*time.Second), canary.Truth{Utilization: d("0.5"), Tolerance: d("0.05")}, canary.Passed, "0", "45", "0.45", ""},
		{"RateOnlyLies", settled(contract.ReasonCompleted, "80", 45*time.Second), canary.Truth{Utilization: d("0.5"), Tolerance: d("0.05")}, canary.Failed, "0.7778", "45", "0.45", ""},
		// A full_use meter charges every GPU busy by its declared rule:
		// 2 GPUs for 60 s are 120 GPU-seconds, whatever the job did.
		{"FullUse", func() contract.Contract {
			c := settled(contract.ReasonCompleted, "120", minute)
			c.Meter = contract.MeterFullUse
			return c
		}(), truth, canary.Passed, "0", "120", "1.2", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := canary.Judge(tt.c, tt.truth, 2, t0)
			assert.Equal(t, tt.verdict, r.Verdict, r.Why)
			assert.Equal(t, d(tt.deviation).String(), r.Deviation.String())
			assert.Equal(t, d(tt.expectedU).String(), r.ExpectedU.String())
			assert.Equal(t, d(tt.charge).String(), r.ExpectedCharge.String())
			assert.Contains(t, r.Why, tt.why)
			assert.Equal(t, "gpu1", r.Server)
			assert.Equal(t, "c-1", r.Contract)
			assert.Equal(t, t0, r.At)
			assert.NoError(t, r.Check())
			assert.Equal(t, r.Verdict != canary.Inconclusive, r.Conclusive())
		})
	}
}

// TestJudgeTime: a meter honest of U with a server that claims the job
// ran twice as long (more to pay where the terms have a Q term) fails on
// T; a meter that says half as much again and so exhausts a prepayment
// the truth fits in, two thirds of the way, settles on the truth's U and
// fails on T too.
func TestJudgeTime(t *testing.T) {
	truth := canary.Truth{Utilization: d("0.5"), Duration: contract.Duration(time.Minute), Tolerance: d("0.05")}
	c := settled(contract.ReasonCompleted, "60", 2*time.Minute)
	c.Terms.Q = contract.Flat(d("0.01"))
	c.Terms.Prepayment = c.Terms.CappedPrepayment(2)
	s, err := contract.Charge(c.Terms, c.Reading.Usage(), 2)
	require.NoError(t, err)
	c.Charge, c.Refund = s.Charge, s.Refund // 0.60 + 120 s × 0.01
	r := canary.Judge(c, truth, 2, t0)
	assert.Equal(t, canary.Failed, r.Verdict, r.Why)
	assert.Equal(t, "0", r.Deviation.String(), "U is the truth")
	require.NotNil(t, r.TDeviation)
	assert.Equal(t, "1", r.TDeviation.String())
	assert.Equal(t, "1.2", r.ExpectedCharge.String(), "0.60 + 60 s × 0.01")
	assert.Equal(t, "1.8", c.Charge.String())
	assert.Equal(t, "0.5", r.ChargeDeviation.String())
	assert.Contains(t, r.Why, "T 2m0s where the job ran 1m0s: +100%, beyond ±5% (charged 1.8 where the job's use costs 1.2)")

	early := settled(contract.ReasonExhausted, "60", 40*time.Second)
	early.Terms.Prepayment, early.Charge = d("0.60"), d("0.60")
	r = canary.Judge(early, truth, 2, t0)
	assert.Equal(t, canary.Failed, r.Verdict, r.Why)
	assert.Equal(t, "0", r.Deviation.String(), "the lie made U the truth's")
	assert.Equal(t, "-0.3333", r.TDeviation.String())
}

// TestJudgeSteepCurve: an honest meter's noise within the tolerance
// passes, however steeply the server's price rises with the rate of use:
// U 2.5% over the truth on a curve from nothing at a rate of 0.9 GPUs
// costs 28% more, which the meter's noise explains and the canary does
// not judge.
func TestJudgeSteepCurve(t *testing.T) {
	c := settled(contract.ReasonCompleted, "61.5", time.Minute)
	c.Terms.P = contract.Curve{{X: d("0.9"), Y: d("0")}, {X: d("2"), Y: d("1")}}
	c.Terms.Prepayment = contract.MaxCharge(c.Terms, 2)
	s, err := contract.Charge(c.Terms, c.Reading.Usage(), 2)
	require.NoError(t, err)
	c.Charge = s.Charge
	r := canary.Judge(c, canary.Truth{Utilization: d("0.5"), Duration: contract.Duration(time.Minute), Tolerance: d("0.05")}, 2, t0)
	assert.Equal(t, "60", r.ExpectedU.String())
	assert.Equal(t, "5.45", r.ExpectedCharge.String(), "60 GPU-s at a rate of 1 GPU: 0.1/1.1 each")
	assert.Equal(t, canary.Passed, r.Verdict, r.Why)
	assert.Equal(t, "0.025", r.Deviation.String())
	require.NotNil(t, r.ChargeDeviation)
	assert.True(t, r.ChargeDeviation.GreaterThan(d("0.05")), "the charge strays more than the tolerance: %s", r.ChargeDeviation)
}

// TestTruthCheck: what a truth may say.
func TestTruthCheck(t *testing.T) {
	ok := canary.Truth{Utilization: d("0.5"), Duration: contract.Duration(time.Minute), Tolerance: d("0.05")}
	assert.NoError(t, ok.Check())
	for name, tr := range map[string]canary.Truth{
		"utilization": {Utilization: d("0"), Tolerance: d("0.05")},
		"over one":    {Utilization: d("1.5"), Tolerance: d("0.05")},
		"duration":    {Utilization: d("0.5"), Duration: -1, Tolerance: d("0.05")},
		"tolerance":   {Utilization: d("0.5"), Tolerance: d("1")},
	} {
		assert.Error(t, tr.Check(), name)
	}
}

func TestPercent(t *testing.T) {
	assert.Equal(t, "+50%", canary.Percent(d("0.5")))
	assert.Equal(t, "-0.5%", canary.Percent(d("-0.005")))
	assert.Equal(t, "0%", canary.Percent(d("0")))
}
