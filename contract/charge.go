package contract

import (
	"time"

	"github.com/bourse/bourse"
	"github.com/shopspring/decimal"
)

// Usage is what a server has measured of a contract, cumulatively, since the
// job started or resumed.
type Usage struct {
	// U is the work done, in GPU-seconds: busy time summed over the GPUs.
	U decimal.Decimal
	// T is the wall time, exact to the nanosecond as clocks give it.
	T time.Duration
	// S is the minimum share, in GPUs continuously available to the job.
	S decimal.Decimal
}

// Settlement splits a contract's prepayment between server and client.
// Charge + Refund = prepayment, exactly, and 0 ≤ Charge ≤ prepayment.
type Settlement struct {
	Charge decimal.Decimal // to the server
	Refund decimal.Decimal // back to the client
	// Exhausted reports that the amount due reached the prepayment: the
	// server must suspend the job, since further work goes unpaid.
	Exhausted bool
}

// Charge settles the terms on the usage at the currency's scale: the amount
// due (see Due), capped at the prepayment, and the rest refunded.
func Charge(t Terms, u Usage, scale int32) (Settlement, error) {
	due, err := amountDue("contract.Charge", t, u, scale)
	if err != nil {
		return Settlement{}, err
	}
	c := decimal.Min(due, t.Prepayment)
	return Settlement{Charge: c, Refund: t.Prepayment.Sub(c), Exhausted: due.GreaterThanOrEqual(t.Prepayment)}, nil
}

// Due is the amount due for the usage, U·P(U/T) + T·Q(S), computed exactly
// and truncated to scale decimal places, not capped at the prepayment: a
// server compares this running charge with the prepayment to know when to
// suspend.
//
// Meters are noisy, so readings are first clamped to what the terms allow:
// T to [0, L], U to [0, g·T], S to [0, g]; U and S are then truncated to
// MaxPlaces places. T = 0 charges nothing. A negative reading is an error
// (EInvalid), as are terms that cannot be priced (a broken curve, g < 1,
// L ≤ 0, a negative prepayment or one finer than scale) and a scale outside
// 0..MaxPlaces. Due does not apply Validate's other bounds, so that a
// contract accepted under them settles even if they change.
func Due(t Terms, u Usage, scale int32) (decimal.Decimal, error) {
	return amountDue("contract.Due", t, u, scale)
}

// DueSoFar is what a contract of terms t in state st owes by its last
// reading r, at scale: what settling it now would charge (Due). False
// where it has ended (its charge is then known), has no reading yet, or
// the reading cannot be priced. Every screen that shows a running
// contract's charge so far shows this (Contract.DueSoFar).
func DueSoFar(t Terms, st State, r *Reading, scale int32) (decimal.Decimal, bool) {
	if st.Ended() || r == nil {
		return decimal.Zero, false
	}
	due, err := Due(t, r.Usage(), scale)
	return due, err == nil
}

// DueSoFar is what c owes by its last reading (DueSoFar).
func (c Contract) DueSoFar(scale int32) (decimal.Decimal, bool) {
	return DueSoFar(c.Terms, c.State, c.Reading, scale)
}

func amountDue(op string, t Terms, u Usage, scale int32) (decimal.Decimal, error) {
	if err := checkPriceable(op, t, scale); err != nil {
		return decimal.Zero, err
	}
	u, err := clamp(op, t, u)
	if err != nil {
		return decimal.Zero, err
	}
	return due(t, u, scale), nil
}

// MaxCharge is the most the terms can cost at the given scale: full use of
// all g GPUs for the whole time limit L, g·L·P(g) + L·Q(g), truncated like
// every charge. Both terms are non-decreasing in U, T and S, so no feasible
// usage costs more. It assumes the terms are valid and returns a
// meaningless value, without panicking, where they are not.
func MaxCharge(t Terms, scale int32) decimal.Decimal {
	if t.GPUs < 1 || t.TimeLimit <= 0 {
		return decimal.Zero
	}
	g := fixInt(int64(t.GPUs))
	if u, ok := g.mul(fixSeconds(t.TimeLimit)); ok {
		if d, ok := fixedDue(t, u, t.TimeLimit, g, scale); ok {
			return d
		}
	}
	gd := decimal.NewFromInt(int64(t.GPUs))
	return dueDecimal(t, Usage{U: gd.Mul(seconds(t.TimeLimit)), T: t.TimeLimit, S: gd}, scale)
}

// due evaluates the formula on clamped usage as one exact fraction,
//
//	U·nP/dP + T·nQ/dQ = (U·nP·dQ + T·nQ·dP) / (dP·dQ),
//
// and truncates it toward zero, in the client's favour, to scale places.
// It computes on fixed numbers where they do not overflow (exact.go),
// else on decimals: the same value either way.
func due(t Terms, u Usage, scale int32) decimal.Decimal {
	if u.T <= 0 {
		return decimal.Zero
	}
	if U, ok := fix(u.U); ok {
		if S, ok := fix(u.S); ok {
			if d, ok := fixedDue(t, U, u.T, S, scale); ok {
				return d
			}
		}
	}
	return dueDecimal(t, u, scale)
}

// dueDecimal is due on decimals, for any size of number.
func dueDecimal(t Terms, u Usage, scale int32) decimal.Decimal {
	if u.T <= 0 {
		return decimal.Zero
	}
	T := seconds(u.T)
	pn, pd := t.P.at(u.U, T)
	qn, qd := t.Q.at(u.S, one)
	num := u.U.Mul(pn).Mul(qd).Add(T.Mul(qn).Mul(pd))
	q, _ := num.QuoRem(pd.Mul(qd), scale)
	return q
}

// checkPriceable checks what pricing itself relies on: sorted non-negative
// curves (for a non-negative, bounded charge), g and L positive (for the
// clamps), and a prepayment at the currency's scale (so that the refund is
// too).
func checkPriceable(op string, t Terms, scale int32) error {
	if err := checkScale(op, scale); err != nil {
		return err
	}
	if t.GPUs < 1 {
		return fail(bourse.EInvalidOffer, op, "gpus", "%d; want at least 1", t.GPUs)
	}
	if t.TimeLimit <= 0 {
		return fail(bourse.EInvalidOffer, op, "time_limit", "%v; want more than 0", t.TimeLimit)
	}
	if err := t.P.validate(op, "p"); err != nil {
		return err
	}
	if err := t.Q.validate(op, "q"); err != nil {
		return err
	}
	if why := checkNumber(t.Prepayment); why != "" {
		return fail(bourse.EInvalidOffer, op, "prepayment", "%s", why)
	}
	if t.Prepayment.Sign() < 0 {
		return fail(bourse.EInvalidOffer, op, "prepayment", "negative: %s", t.Prepayment)
	}
	if !hasPlaces(t.Prepayment, scale) {
		return fail(bourse.EInvalidOffer, op, "prepayment", "%s has more than %d decimal places", t.Prepayment, scale)
	}
	return nil
}

// clamp bounds a reading by what the terms allow; see Due.
func clamp(op string, t Terms, u Usage) (Usage, error) {
	if u.T < 0 {
		return Usage{}, fail(bourse.EInvalid, op, "t", "negative: %v", u.T)
	}
	for _, v := range []struct {
		field string
		d     decimal.Decimal
	}{{"u", u.U}, {"s", u.S}} {
		if e := v.d.Exponent(); e < -maxExp || e > maxExp {
			return Usage{}, fail(bourse.EInvalid, op, v.field, "exponent %d is out of range", e)
		}
		if v.d.Sign() < 0 {
			return Usage{}, fail(bourse.EInvalid, op, v.field, "negative: %s", v.d)
		}
	}
	T := min(u.T, t.TimeLimit)
	if c, ok := clampFixed(t.GPUs, u, T); ok {
		return c, nil
	}
	g := decimal.NewFromInt(int64(t.GPUs))
	return Usage{
		U: decimal.Min(u.U, g.Mul(seconds(T))).Truncate(MaxPlaces),
		T: T,
		S: decimal.Min(u.S, g).Truncate(MaxPlaces),
	}, nil
}

// clampFixed is clamp's bounds on U and S compared on fixed numbers
// (exact.go); it gives up where they overflow or a bound would be made.
func clampFixed(gpus int, u Usage, T time.Duration) (Usage, bool) {
	U, ok1 := fix(u.U)
	S, ok2 := fix(u.S)
	gT, ok3 := fixInt(int64(gpus)).mul(fixSeconds(T))
	if !ok1 || !ok2 || !ok3 {
		return Usage{}, false
	}
	cu, ok1 := U.cmp(gT)
	cs, ok2 := S.cmp(fixInt(int64(gpus)))
	if !ok1 || !ok2 || cu > 0 || cs > 0 {
		return Usage{}, false
	}
	return Usage{U: u.U.Truncate(MaxPlaces), T: T, S: u.S.Truncate(MaxPlaces)}, true
}

// seconds converts a duration to decimal seconds, exactly.
func seconds(d time.Duration) decimal.Decimal {
	return decimal.New(int64(d), -9)
}
