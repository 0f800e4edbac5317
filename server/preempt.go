package server

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/bourse/bourse/contract"
)

// Preempting takes a guaranteed offer over running preemptible contracts
// when it pays more. When Base rejects a offer that is not preemptible
// itself for want of free GPUs of its class, Preempting looks for running
// preemptible contracts holding enough such GPUs, each paying less per GPU
// at full use than the offer; and when Base would accept the offer with
// those GPUs free, it accepts, naming the cheapest of them to suspend in
// Decision.Preempt. The suspended contracts settle on their final
// readings, with reason preempted, and may resume elsewhere.
//
// Its counter-offers are Base's, made on the GPUs free now.
type Preempting struct {
	Base Policy
}

var _ Policy = Preempting{}

// String names the policy in the server's heartbeats: "preempting" and the
// base's name.
func (p Preempting) String() string {
	if s, ok := p.Base.(fmt.Stringer); ok {
		return "preempting " + s.String()
	}
	return "preempting"
}

// Validate checks the base policy, where it can be checked.
func (p Preempting) Validate() error {
	if p.Base == nil {
		return fmt.Errorf("preempting: no base policy")
	}
	if v, ok := p.Base.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			return fmt.Errorf("preempting base: %w", err)
		}
	}
	return nil
}

// Decide accepts what Base accepts, and otherwise preempts as the type's
// comment says.
func (p Preempting) Decide(offer contract.Terms, st View) Decision {
	d := p.Base.Decide(offer, st)
	if d.Accept || offer.Preemptible {
		return d
	}
	need := offer.GPUs - st.FreeFor(offer.Class)
	if need <= 0 {
		return d // rejected for its price or its limits, not for GPUs
	}
	gpu := make(map[int]contract.GPU, len(st.GPUs))
	for _, g := range st.GPUs {
		gpu[g.Index] = g
	}
	type victim struct {
		run  Run
		fits []contract.GPU // its GPUs of the offer's class
		rate contract.Price
	}
	rate := offer.FullUsePrice()
	var vs []victim
	for _, r := range st.Running {
		if !r.Terms.Preemptible {
			continue
		}
		v := victim{run: r, rate: r.Terms.FullUsePrice()}
		for _, i := range r.GPUs {
			if g, ok := gpu[i]; ok && offer.Class.Fits(g.Model, g.MemoryMiB) {
				v.fits = append(v.fits, g)
			}
		}
		if len(v.fits) > 0 && v.rate.Cmp(rate) < 0 {
			vs = append(vs, v)
		}
	}
	// Cheapest first; then those that free the fewest GPUs beyond need,
	// the latest started (the least work lost) and, for determinism, by id.
	slices.SortFunc(vs, func(a, b victim) int {
		switch {
		case a.rate.Cmp(b.rate) < 0:
			return -1
		case b.rate.Cmp(a.rate) < 0:
			return 1
		}
		return cmp.Or(cmp.Compare(len(a.fits), len(b.fits)), b.run.Started.Compare(a.run.Started), cmp.Compare(a.run.ID, b.run.ID))
	})
	after := st
	after.Free = slices.Clone(st.Free)
	after.Running = nil
	var preempt []string
	for _, v := range vs {
		if need <= 0 {
			break
		}
		preempt = append(preempt, v.run.ID)
		need -= len(v.fits)
		for _, i := range v.run.GPUs {
			if g, ok := gpu[i]; ok {
				after.Free = append(after.Free, g)
			}
		}
	}
	if need > 0 {
		return d
	}
	for _, r := range st.Running {
		if !slices.Contains(preempt, r.ID) {
			after.Running = append(after.Running, r)
		}
	}
	// The base judges the offer on the server as it will be once the
	// preempted jobs stop, as it judges any offer on the GPUs free.
	if !p.Base.Decide(offer, after).Accept {
		return d
	}
	return Decision{Accept: true, Preempt: preempt}
}
