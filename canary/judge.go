package canary

import (
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/contract"
)

// deviationPlaces are the decimal places a deviation is kept to: a
// hundredth of a percent.
const deviationPlaces = 4

// conclusive are the reasons a settled contract ends for whose reading
// measured the whole job: it ended by itself, or was held to its time
// limit or its prepayment, each the server's doing. Every other ending
// (lost, expired, shut down, failed, killed, suspended, preempted) cut
// the job short or is the exchange's or a person's doing, and says
// nothing of the meter.
var conclusive = map[contract.Reason]bool{
	contract.ReasonCompleted: true, contract.ReasonTimeLimit: true, contract.ReasonExhausted: true,
}

// Judge judges canary contract c, as its store holds it at now, by the
// truth of its job: at the currency's scale (for the charge).
//
// A contract voided, not settled yet, or settled for a reason that cut
// the job short is inconclusive, as is one stopped by its own terms
// before the job's end: at a time limit shorter than the truth's
// duration, or a prepayment the truth's use would exhaust. Else the truth's U is Utilization × the
// contract's GPUs × Duration (the reading's T where the truth has none);
// with a full_use meter, which charges every GPU busy by its declared
// rule, Utilization is 1. The canary passes where U deviates from it by
// at most the tolerance, and T from the truth's Duration (where it has
// one) likewise; it fails otherwise. The charge is shown beside what the
// terms ask for the truth's use (at its duration and the reading's S).
func Judge(c contract.Contract, truth Truth, scale int32, now time.Time) Result {
	r := Result{Contract: c.ID, Server: c.Server, At: now, Verdict: Inconclusive, Truth: truth, Meter: c.Meter, Reason: c.Reason,
		GPUs: c.Terms.GPUs, Charge: c.Charge}
	switch {
	case c.State == contract.StateVoided:
		r.Why = fmt.Sprintf("voided (%s): the job never ran; the server's record counts its accepts never started", c.Reason)
		return r
	case c.State != contract.StateSettled:
		r.Why = fmt.Sprintf("still %s when judged: not settled in time", c.State)
		return r
	case !conclusive[c.Reason]:
		r.Why = fmt.Sprintf("settled %s: the job was cut short or its end was not its server's doing", c.Reason)
		return r
	case c.Reading == nil:
		r.Why = "settled without a reading"
		return r
	}
	rd := c.Reading
	// The contract's own terms may have stopped the job before its end,
	// whatever its meter said: a time limit shorter than the job, or a
	// prepayment short of what the job's use costs (a counter-offer's
	// terms). Such an ending says nothing of the meter.
	if c.Reason == contract.ReasonTimeLimit && c.Terms.TimeLimit < time.Duration(truth.Duration) {
		r.Why = fmt.Sprintf("settled time_limit: its time limit %v is shorter than the job's %v: cut short by its terms", c.Terms.TimeLimit, time.Duration(truth.Duration))
		return r
	}
	util := truth.Utilization
	if c.Meter == contract.MeterFullUse {
		util = decimal.NewFromInt(1)
	}
	length := time.Duration(truth.Duration)
	if length == 0 {
		length = time.Duration(rd.T)
	}
	gpus := decimal.NewFromInt(int64(c.Terms.GPUs))
	wantU := util.Mul(gpus).Mul(decimal.New(int64(length), -9))
	if !wantU.IsPositive() {
		r.Why = "the truth is no use at all: nothing to compare"
		return r
	}
	expected, err := contract.Charge(c.Terms, contract.Usage{U: wantU, T: length, S: rd.S}, scale)
	if err != nil {
		r.Why = fmt.Sprintf("the terms cannot price the truth: %v", err)
		return r
	}
	// The truth's use exhausts a prepayment it costs more than; one it
	// costs just as much stops the job at its end, its use whole.
	due, err := contract.Due(c.Terms, contract.Usage{U: wantU, T: length, S: rd.S}, scale)
	if err != nil {
		r.Why = fmt.Sprintf("the terms cannot price the truth: %v", err)
		return r
	}
	if c.Reason == contract.ReasonExhausted && due.GreaterThan(c.Terms.Prepayment) {
		r.Why = fmt.Sprintf("settled exhausted: its prepayment %s does not cover the job's use (%s): cut short by its terms", c.Terms.Prepayment, due)
		return r
	}
	r.U, r.T, r.ExpectedU, r.ExpectedCharge = rd.U, rd.T, wantU, expected.Charge
	r.Deviation = rd.U.Sub(r.ExpectedU).DivRound(r.ExpectedU, deviationPlaces)
	if r.ExpectedCharge.IsPositive() {
		d := c.Charge.Sub(r.ExpectedCharge).DivRound(r.ExpectedCharge, deviationPlaces)
		r.ChargeDeviation = &d
	}
	// The charge is the terms' function of U, T and S, which the exchange
	// computes itself: a meter can lie only through them. So the canary
	// judges U and T, each within the tolerance, and shows the charge
	// beside what the truth costs. Judging the charge itself would fail
	// an honest meter whose noise, within the tolerance, a steep price
	// curve multiplies (P rises with U/T).
	tol := truth.Tolerance
	uOK, tOK := r.Deviation.Abs().LessThanOrEqual(tol), true
	if truth.Duration > 0 {
		td := decimal.NewFromInt(int64(rd.T-truth.Duration)).DivRound(decimal.NewFromInt(int64(truth.Duration)), deviationPlaces)
		r.TDeviation = &td
		tOK = td.Abs().LessThanOrEqual(tol)
	}
	pct, within := Percent, "±"+tol.Shift(2).String()+"%"
	switch {
	case uOK && tOK:
		r.Verdict = Passed
		r.Why = fmt.Sprintf("U %s GPU-s for %s (%s) over T %s: within %s; charge %s for %s", rd.U, r.ExpectedU, pct(r.Deviation), time.Duration(rd.T), within, c.Charge, r.ExpectedCharge)
	case !uOK:
		r.Verdict = Failed
		r.Why = fmt.Sprintf("U %s GPU-s where the job used %s: %s, beyond %s", rd.U, r.ExpectedU, pct(r.Deviation), within)
	default:
		r.Verdict = Failed
		r.Why = fmt.Sprintf("T %s where the job ran %s: %s, beyond %s (charged %s where the job's use costs %s)", time.Duration(rd.T), time.Duration(truth.Duration), pct(*r.TDeviation), within, c.Charge, r.ExpectedCharge)
	}
	return r
}

// Percent writes a relative deviation as a signed percentage, "+50%",
// "-0.5%", "0%".
func Percent(d decimal.Decimal) string {
	s := d.Shift(2).String() + "%"
	if d.IsPositive() {
		s = "+" + s
	}
	return s
}
