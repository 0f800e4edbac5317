package server

import (
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"testing"
	"testing/quick"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/contract"
)

// decideCase is a random policy, server state and valid offer.
type decideCase struct {
	Policy Policy
	View   View
	Offer  contract.Terms
}

func (c decideCase) String() string {
	return fmt.Sprintf("policy %+v\nfree %d of %d\nrunning %+v\noffer %+v", c.Policy, len(c.View.Free), len(c.View.GPUs), c.View.Running, c.Offer)
}

// Generate implements quick.Generator.
func (decideCase) Generate(r *rand.Rand, _ int) reflect.Value {
	c := decideCase{View: View{Now: now.Add(time.Duration(r.Int63n(int64(time.Hour)))), Scale: int32(r.Intn(5))}}
	models := []contract.GPU{h100(0), a100(0), {Model: "L4", MemoryMiB: 24576}}
	for i := range 1 + r.Intn(8) {
		g := models[r.Intn(len(models))]
		g.Index = i
		c.View.GPUs = append(c.View.GPUs, g)
		switch {
		case r.Intn(3) > 0:
			c.View.Free = append(c.View.Free, g)
		case len(c.View.Running) > 0 && r.Intn(2) == 0:
			// Busy with the last run, which is not always of one model.
			last := &c.View.Running[len(c.View.Running)-1]
			last.GPUs = append(last.GPUs, i)
			last.Terms.GPUs++
		case r.Intn(4) > 0:
			c.View.Running = append(c.View.Running, Run{ID: fmt.Sprintf("r%d", i), GPUs: []int{i},
				Started: c.View.Now.Add(-time.Duration(r.Intn(3600)) * time.Second),
				Terms:   contract.Terms{GPUs: 1, Preemptible: r.Intn(3) > 0, P: cheap(randCurve(r, 3)), Q: cheap(randCurve(r, 2))}})
		} // else claimed for an offer
	}
	reserve := Posted{P: randCurve(r, 4), Q: randCurve(r, 3)}
	if r.Intn(2) == 0 {
		reserve.MaxTimeLimit = time.Duration(1+r.Intn(120)) * time.Minute
	}
	if r.Intn(3) == 0 {
		reserve.CounterTTL = time.Duration(1+r.Intn(60)) * time.Second
	}
	c.Policy = reserve
	if r.Intn(2) == 0 {
		c.Policy = Utilization{Base: reserve, K: decimal.New(r.Int63n(300), -2)}
	}
	if r.Intn(2) == 0 {
		c.Policy = Preempting{Base: c.Policy}
	}
	if r.Intn(4) == 0 {
		f := FairUse{Base: c.Policy, MaxRunning: r.Intn(3), Cooldown: time.Duration(r.Intn(2)) * time.Hour}
		if r.Intn(2) == 0 {
			f.MaxTimeLimit = time.Duration(1+r.Intn(120)) * time.Minute
		}
		if r.Intn(2) == 0 {
			longest := f.MaxTimeLimit
			if longest == 0 {
				longest = time.Hour
			}
			f.MinTimeLimit = time.Duration(r.Int63n(int64(longest)))
		}
		c.Policy = f
		c.View.Client = ClientUse{Running: r.Intn(3), LastEnd: c.View.Now.Add(-time.Duration(r.Intn(7200)) * time.Second)}
	}

	o := contract.Terms{Client: "c", Currency: "GPU", GPUs: 1 + r.Intn(8), Preemptible: r.Intn(4) == 0,
		TimeLimit: time.Duration(1+r.Int63n(int64(3*time.Hour/time.Second))) * time.Second}
	switch r.Intn(3) {
	case 0:
		o.Class.Model = models[r.Intn(len(models))].Model
	case 1:
		o.Class.MinMemoryMiB = models[r.Intn(len(models))].MemoryMiB
	}
	// Offers near the reserve accept and reject about equally.
	if r.Intn(2) == 0 {
		o.P, o.Q = nudge(r, reserve.P), nudge(r, reserve.Q)
	} else {
		o.P, o.Q = randCurve(r, 4), randCurve(r, 3)
	}
	// A prepayment of at least one unit of the scale, up to the maximum.
	unit := decimal.New(1, -c.View.Scale)
	max := contract.MaxCharge(o, c.View.Scale)
	if max.LessThan(unit) { // no valid prepayment: make the offer dearer
		o.P = contract.Flat(decimal.NewFromInt(1))
		max = contract.MaxCharge(o, c.View.Scale)
	}
	o.Prepayment = decimal.Max(unit, max.Mul(decimal.New(1+r.Int63n(100), -2)).Truncate(c.View.Scale))
	c.Offer = o
	return reflect.ValueOf(c)
}

// randCurve is a valid curve of up to n points, sometimes empty, sometimes
// starting right of zero (a jump).
func randCurve(r *rand.Rand, n int) contract.Curve {
	c := make(contract.Curve, r.Intn(n+1))
	x := decimal.New(r.Int63n(2)*r.Int63n(300), -2)
	y := decimal.New(r.Int63n(100), -4)
	for i := range c {
		c[i] = contract.Point{X: x, Y: y}
		x = x.Add(decimal.New(1+r.Int63n(300), -2))
		y = y.Add(decimal.New(r.Int63n(3)*r.Int63n(100), -4))
	}
	return c
}

// nudge moves each y of c a little up or down, keeping it valid.
func nudge(r *rand.Rand, c contract.Curve) contract.Curve {
	out := make(contract.Curve, len(c))
	floor := decimal.Zero
	for i, p := range c {
		y := decimal.Max(floor, p.Y.Add(decimal.New(r.Int63n(5)-2, -4)))
		out[i], floor = contract.Point{X: p.X, Y: y}, y
	}
	return out
}

// TestCountersAccepted checks the promise of a counter-offer: the policy
// that made it accepts it, in the same state; it is a valid offer, for no
// more GPUs or time than asked; and there is none when nothing is free.
// It also checks accepted offers against the reserve at sample points.
func TestCountersAccepted(t *testing.T) {
	scaleOf := func(st View) func(string) (int32, bool) {
		return func(string) (int32, bool) { return st.Scale, true }
	}
	accepted, countered, preempted := 0, 0, 0
	check := func(c decideCase) bool {
		if err := contract.Validate(c.Offer, scaleOf(c.View)); err != nil {
			t.Fatalf("generated an invalid offer: %v\n%v", err, c)
		}
		if v, ok := c.Policy.(interface{ Validate() error }); ok {
			if err := v.Validate(); err != nil {
				t.Fatalf("generated an invalid policy: %v\n%v", err, c)
			}
		}
		got := c.Policy.Decide(c.Offer, c.View)
		if got.Accept {
			accepted++
			if len(got.Preempt) > 0 {
				preempted++
				return len(got.Counters) == 0 && preemptsFairly(t, c, got.Preempt)
			}
			return len(got.Counters) == 0 && paysReserve(t, c)
		}
		if c.View.FreeFor(c.Offer.Class) == 0 && len(got.Counters) > 0 {
			t.Logf("counter with nothing free: %v", c)
			return false
		}
		for _, counter := range got.Counters {
			countered++
			if err := contract.Validate(counter, scaleOf(c.View)); err != nil {
				t.Logf("invalid counter %+v: %v\n%v", counter, err, c)
				return false
			}
			if counter.GPUs > c.Offer.GPUs || counter.TimeLimit > c.Offer.TimeLimit || !got.ValidUntil.After(c.View.Now) {
				t.Logf("counter %+v asks for more, or lapsed\n%v", counter, c)
				return false
			}
			if again := c.Policy.Decide(counter, c.View); !again.Accept {
				t.Logf("counter %+v rejected: %s\n%v", counter, again.Reason, c)
				return false
			}
		}
		return true
	}
	cfg := &quick.Config{MaxCount: 8000, Rand: rand.New(rand.NewSource(20260301))}
	if err := quick.Check(check, cfg); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d accepted, %d of them preempting, %d counters", accepted, preempted, countered)
	if accepted < 100 || countered < 100 || preempted < 20 {
		t.Fatalf("the generator is lopsided: %d accepted, %d preempting, %d counters", accepted, preempted, countered)
	}
}

// preemptsFairly checks a preempting accept: the offer is guaranteed, too
// few GPUs of its class are free, and the runs it preempts are
// preemptible, pay less per GPU, and free enough GPUs of the class.
func preemptsFairly(t *testing.T, c decideCase, preempt []string) bool {
	free := c.View.FreeFor(c.Offer.Class)
	if c.Offer.Preemptible || free >= c.Offer.GPUs {
		t.Logf("preempts %v needlessly\n%v", preempt, c)
		return false
	}
	for _, id := range preempt {
		i := slices.IndexFunc(c.View.Running, func(r Run) bool { return r.ID == id })
		if i < 0 {
			t.Logf("preempts %s, which does not run\n%v", id, c)
			return false
		}
		r := c.View.Running[i]
		if !r.Terms.Preemptible || r.Terms.FullUsePrice().Cmp(c.Offer.FullUsePrice()) >= 0 {
			t.Logf("preempts %s, which is guaranteed or pays as much\n%v", id, c)
			return false
		}
		for _, g := range c.View.GPUs {
			if slices.Contains(r.GPUs, g.Index) && c.Offer.Class.Fits(g.Model, g.MemoryMiB) {
				free++
			}
		}
	}
	if free < c.Offer.GPUs {
		t.Logf("preempting %v frees too few GPUs\n%v", preempt, c)
		return false
	}
	return true
}

// paysReserve samples an accepted offer's curves against the reserve on a
// grid of [0, g] and at every breakpoint, as a second opinion on contract.Curve.Covers.
func paysReserve(t *testing.T, c decideCase) bool {
	policy := c.Policy
	if f, isF := policy.(FairUse); isF {
		policy = f.Base
	}
	if p, isP := policy.(Preempting); isP {
		policy = p.Base
	}
	r, ok := policy.(Posted)
	if u, isU := policy.(Utilization); isU {
		r, ok = u.PostedAt(c.View), true
	}
	if !ok {
		return true
	}
	g := decimal.NewFromInt(int64(c.Offer.GPUs))
	var xs []decimal.Decimal
	for i := int64(0); i <= 64; i++ {
		xs = append(xs, g.Mul(decimal.New(i, 0)).Div(decimal.New(64, 0)))
	}
	for _, cv := range []contract.Curve{c.Offer.P, c.Offer.Q, r.P, r.Q} {
		for _, p := range cv {
			xs = append(xs, p.X, p.X.Sub(decimal.New(1, -12)))
		}
	}
	for _, x := range xs {
		if x.IsNegative() || x.GreaterThan(g) {
			continue
		}
		if c.Offer.P.Eval(x).LessThan(r.P.Eval(x)) || c.Offer.Q.Eval(x).LessThan(r.Q.Eval(x)) {
			t.Logf("accepted, yet below the reserve at %s\n%v", x, c)
			return false
		}
	}
	return true
}

// cheap is c at a tenth of its price: preemptible work sells for less.
func cheap(c contract.Curve) contract.Curve {
	return scaleCurve(c, decimal.NewFromInt(1), decimal.NewFromInt(10))
}
