package server

import (
	"fmt"
	"strings"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
)

// DefaultCounterTTL is how long counter-offers stand when a policy does not
// say: long enough for a person to read one and take it.
const DefaultCounterTTL = 15 * time.Second

// Posted is a posted price: it accepts any offer that pays at least its own
// curves everywhere the job could run, asks for no more GPUs than are free,
// and stays within its longest time limit.
type Posted struct {
	P, Q         contract.Curve // the least the server takes, as offer curves
	MaxTimeLimit time.Duration  // the longest job it takes; 0 for no limit
	CounterTTL   time.Duration  // how long its counter-offers stand; 0 for DefaultCounterTTL
}

var _ Policy = Posted{}

// String names the policy in the server's heartbeats.
func (r Posted) String() string { return "reserve" }

// Validate checks the reserve curves as an offer's would be checked.
func (r Posted) Validate() error {
	for _, c := range []struct {
		name  string
		curve contract.Curve
	}{{"p", r.P}, {"q", r.Q}} {
		if err := c.curve.Validate(); err != nil {
			return fmt.Errorf("reserve %s: %w", c.name, err)
		}
	}
	if r.MaxTimeLimit < 0 || r.CounterTTL < 0 {
		return bourse.Errorf(bourse.EInvalid, "server.Posted.Validate", "negative duration")
	}
	return nil
}

// Decide accepts the offer or makes one counter-offer: the offer with its
// GPUs cut to those free, its time limit cut to the maximum, and each curve
// that falls short of the reserve replaced by the reserve, with the
// prepayment scaled with the maximum charge where the prices rose (so that
// it still covers the job the client sized it for) and lowered where it
// now exceeds the maximum charge. There is no
// counter when no GPU of the class is free.
func (r Posted) Decide(offer contract.Terms, st View) Decision {
	free := st.FreeFor(offer.Class)
	if free == 0 {
		return Decision{Reason: "no free GPU of the class"}
	}
	c, why := contract.Reserve{P: r.P, Q: r.Q, MaxTimeLimit: r.MaxTimeLimit}.Counter(offer, free, st.Scale)
	if len(why) == 0 {
		return Decision{Accept: true}
	}
	d := Decision{Reason: strings.Join(why, "; ")}
	if c.IsZero() {
		return d
	}
	ttl := r.CounterTTL
	if ttl <= 0 {
		ttl = DefaultCounterTTL
	}
	d.Counters, d.ValidUntil = []contract.Terms{c}, st.Now.Add(ttl)
	return d
}
