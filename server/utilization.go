package server

import (
	"fmt"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
)

// Utilization prices by how full the server is: the base reserve curves are
// multiplied by 1 + K·busy/total, so the last free GPUs cost the most and an
// idle server takes the base price.
type Utilization struct {
	Base Posted
	// K is how much dearer a full server is than an idle one: with K = 1
	// the reserve doubles as the GPUs fill. Zero is the base reserve.
	K decimal.Decimal
}

var _ Policy = Utilization{}

// String names the policy in the server's heartbeats.
func (u Utilization) String() string { return "utilisation" }

// Validate checks the base reserve and K.
func (u Utilization) Validate() error {
	if u.K.IsNegative() {
		return bourse.Errorf(bourse.EInvalid, "server.Utilization.Validate", "k is negative: %s", u.K)
	}
	if err := u.Base.Validate(); err != nil {
		return fmt.Errorf("utilisation base: %w", err)
	}
	return nil
}

// Decide decides as the posted price of the moment, PostedAt(st).
func (u Utilization) Decide(offer contract.Terms, st View) Decision {
	return u.PostedAt(st).Decide(offer, st)
}

// PostedAt is the base posted price scaled for st's utilization. Scaled
// prices are rounded up at contract.MaxPlaces, so that they remain valid
// offer curves (and still at least the exact price).
func (u Utilization) PostedAt(st View) Posted {
	total := len(st.GPUs)
	if total == 0 || u.K.IsZero() {
		return u.Base
	}
	den := decimal.NewFromInt(int64(total))
	num := den.Add(u.K.Mul(decimal.NewFromInt(int64(st.Busy()))))
	r := u.Base
	r.P, r.Q = scaleCurve(u.Base.P, num, den), scaleCurve(u.Base.Q, num, den)
	return r
}

// scaleCurve multiplies each y by num/den, rounding up. Rounding up is
// monotone, so the curve stays non-decreasing. The quotient comes with
// MaxPlaces decimal places, zeros included; they are dropped, exactly, so
// that a counter-offer's price reads 0.2, not 0.200000000000000000
// (terms keep the places their amounts are written with, on the wire too).
func scaleCurve(c contract.Curve, num, den decimal.Decimal) contract.Curve {
	if c == nil {
		return nil
	}
	out := make(contract.Curve, len(c))
	ulp := decimal.New(1, -contract.MaxPlaces)
	for i, p := range c {
		q, rem := p.Y.Mul(num).QuoRem(den, contract.MaxPlaces)
		if rem.Sign() > 0 {
			q = q.Add(ulp)
		}
		out[i] = contract.Point{X: p.X, Y: decimal.RequireFromString(q.String())}
	}
	return out
}
