package contract

import (
	"fmt"
	"slices"
	"time"

	"github.com/shopspring/decimal"
)

// Reserve is the least a seller takes: curves an offer's must cover
// wherever its job can run, and the longest time limit it takes (zero:
// any). A server's posted price is one; so is what it asks (Ask.Reserve).
type Reserve struct {
	P, Q         Curve
	MaxTimeLimit time.Duration
}

// Counter answers offer from a seller with reserve r and free GPUs of
// its class: why lists what the offer falls short in (none: the offer
// meets the reserve, and counter is zero); counter is the offer with its
// GPUs cut to those free, its time limit cut to the most, and each curve
// that falls short replaced by the reserve's, its prepayment scaled with
// the maximum charge where the prices rose (so that it still covers the
// job the client sized it for) and capped at the new maximum charge. A
// counter that cannot be a valid offer (no prepayment) is zero, with why.
func (r Reserve) Counter(offer Terms, free int, scale int32) (counter Terms, why []string) {
	c := offer
	if offer.GPUs > free {
		c.GPUs = free
		why = append(why, fmt.Sprintf("%d GPUs wanted, %d free", offer.GPUs, free))
	}
	if r.MaxTimeLimit > 0 && offer.TimeLimit > r.MaxTimeLimit {
		c.TimeLimit = r.MaxTimeLimit
		why = append(why, fmt.Sprintf("time limit %v is over %v", offer.TimeLimit, r.MaxTimeLimit))
	}
	// Prices matter only where the job can run: rates and shares up to the
	// GPUs it gets, which for the counter may be fewer than it asked for.
	g := decimal.NewFromInt(int64(c.GPUs))
	repriced := false
	if !offer.P.Covers(r.P, g) {
		c.P, repriced = slices.Clone(r.P), true
		why = append(why, "p is below the reserve")
	}
	if !offer.Q.Covers(r.Q, g) {
		c.Q, repriced = slices.Clone(r.Q), true
		why = append(why, "q is below the reserve")
	}
	if len(why) == 0 {
		return Terms{}, nil
	}
	if repriced {
		// The offer's prepayment was sized for its own prices: at the
		// reserve it would run out before the job is done, and the taker
		// would pay for work cut short. The counter keeps the offer's
		// prepayment in proportion to what its terms can cost at most.
		was, now := MaxCharge(offer, scale), MaxCharge(c, scale)
		if was.IsPositive() {
			c.Prepayment = offer.Prepayment.Mul(now).Div(was).Truncate(scale)
		}
	}
	if c.Prepayment = c.CappedPrepayment(scale); !c.Prepayment.IsPositive() {
		// Nothing valid to propose: an offer's prepayment must be positive
		// and at most its maximum charge.
		return Terms{}, why
	}
	return c, why
}
