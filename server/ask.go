package server

import (
	"cmp"
	"slices"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// Asker is a policy that says what it asks of a class of GPUs in a state,
// without an offer: the least it takes, as offer curves, and its longest
// time limit (a reserve), and whether it preempts or books. A policy that
// is not one is asked with a standard offer instead (standardAsk).
type Asker interface {
	Ask(c contract.Class, st View) Asked
}

// Asked is what a policy asks of a class.
type Asked struct {
	contract.Reserve
	Preempts, Books bool
}

// Ask asks the reserve; a posted price with no P asks nothing, which
// it says as a P of zero (an ask with no P says nothing of its price).
func (r Posted) Ask(contract.Class, View) Asked {
	p := r.P
	if len(p) == 0 {
		p = contract.Flat(decimal.Zero)
	}
	return Asked{Reserve: contract.Reserve{P: p, Q: r.Q, MaxTimeLimit: r.MaxTimeLimit}}
}

// Ask asks the posted price of the moment.
func (u Utilization) Ask(c contract.Class, st View) Asked { return u.PostedAt(st).Ask(c, st) }

// Ask asks what Base asks, and says that it preempts.
func (p Preempting) Ask(c contract.Class, st View) Asked {
	a := askOf(p.Base, c, st)
	a.Preempts = true
	return a
}

// Ask asks what Base asks, and says that it books.
func (b Bookings) Ask(c contract.Class, st View) Asked {
	a := askOf(b.Base, c, st)
	a.Books = true
	return a
}

// Ask asks what Base asks, within the fair-use time limit.
func (f FairUse) Ask(c contract.Class, st View) Asked {
	a := askOf(f.Base, c, st)
	if f.MaxTimeLimit > 0 && (a.MaxTimeLimit == 0 || f.MaxTimeLimit < a.MaxTimeLimit) {
		a.MaxTimeLimit = f.MaxTimeLimit
	}
	return a
}

// askOf is what p asks of class c in st: its own Ask where it has one,
// else the curves of its counter to a standard offer.
func askOf(p Policy, c contract.Class, st View) Asked {
	if a, ok := p.(Asker); ok {
		return a.Ask(c, st)
	}
	return standardAsk(p, c, st)
}

// standardAsk asks a policy that does not say what it asks: it decides a
// standard offer, one GPU of the class for an hour at the least price a
// curve can name, on a view with that GPU free. Its counter's curves are
// the ask; an accept asks that least price; a rejection without a counter
// leaves the ask unpriced (the exchange then asks the server, as it
// asked servers before asks).
func standardAsk(p Policy, c contract.Class, st View) Asked {
	least := decimal.New(1, -contract.MaxPlaces)
	t := contract.Terms{Currency: "", GPUs: 1, Class: c, TimeLimit: time.Hour, P: contract.Flat(least)}
	t.Prepayment = t.CappedPrepayment(st.Scale)
	if !t.Prepayment.IsPositive() {
		t.Prepayment = decimal.New(1, -st.Scale)
	}
	if st.FreeFor(c) == 0 {
		for _, g := range st.GPUs {
			if c.Fits(g.Model, g.MemoryMiB) {
				st.Free = append(slices.Clip(st.Free), g)
				break
			}
		}
	}
	d := p.Decide(t, st)
	switch {
	case d.Accept:
		return Asked{Reserve: contract.Reserve{P: t.P}}
	case len(d.Counters) > 0:
		return Asked{Reserve: contract.Reserve{P: d.Counters[0].P, Q: d.Counters[0].Q}}
	}
	return Asked{}
}

// ask is the node's ask at now: per class of its GPUs, what the policy
// asks, the GPUs free, running preemptible work, and when busy ones free
// up. n.mu is held.
func (n *Node) ask(now time.Time) *protocol.Ask {
	st := n.view(now, "")
	out := &protocol.Ask{}
	// Busy GPUs by class: running preemptible work, and when each run's
	// time limit frees its GPUs.
	type class struct {
		model string
		mem   int
	}
	preemptible := map[class]int{}
	runs := map[class]map[string]*protocol.PreemptibleRun{}
	freeAt := map[class]map[time.Time]int{}
	byIndex := map[int]contract.GPU{}
	for _, g := range n.cfg.GPUs {
		byIndex[g.Index] = g
	}
	for _, r := range n.active {
		if r.halting != "" {
			continue
		}
		end := r.started.At.Add(r.terms.TimeLimit)
		for _, i := range r.started.GPUs {
			g := byIndex[i]
			k := class{g.Model, g.MemoryMiB}
			if n.owner[i] != "run "+r.id {
				continue // claimed away for a preemption
			}
			if r.terms.Preemptible && r.claimed == "" {
				preemptible[k]++
				if runs[k] == nil {
					runs[k] = map[string]*protocol.PreemptibleRun{}
				}
				if runs[k][r.id] == nil {
					runs[k][r.id] = &protocol.PreemptibleRun{Rate: r.terms.FullUsePrice().Ceil(protocol.RatePlaces)}
				}
				runs[k][r.id].GPUs++
			}
			if freeAt[k] == nil {
				freeAt[k] = map[time.Time]int{}
			}
			freeAt[k][end]++
		}
	}
	for _, g := range n.cfg.GPUs {
		k := class{g.Model, g.MemoryMiB}
		i := slices.IndexFunc(out.Classes, func(c protocol.ClassAsk) bool { return c.Model == k.model && c.MemoryMiB == k.mem })
		if i < 0 {
			out.Classes = append(out.Classes, protocol.ClassAsk{Model: k.model, MemoryMiB: k.mem})
			i = len(out.Classes) - 1
		}
		c := &out.Classes[i]
		c.GPUs++
		if _, used := n.owner[g.Index]; !used {
			c.Free++
		}
	}
	for i := range out.Classes {
		c := &out.Classes[i]
		k := class{c.Model, c.MemoryMiB}
		c.Preemptible = preemptible[k]
		for _, r := range runs[k] {
			c.PreemptibleRuns = append(c.PreemptibleRuns, *r)
		}
		slices.SortFunc(c.PreemptibleRuns, func(x, y protocol.PreemptibleRun) int {
			return cmp.Or(x.Rate.Cmp(y.Rate), cmp.Compare(x.GPUs, y.GPUs))
		})
		for at, gpus := range freeAt[k] {
			c.FreeAt = append(c.FreeAt, protocol.FreeAt{At: at.UTC(), GPUs: gpus})
		}
		slices.SortFunc(c.FreeAt, func(x, y protocol.FreeAt) int { return x.At.Compare(y.At) })
		if len(c.FreeAt) > protocol.MaxFreeAt {
			// The last keeps the count of every GPU freeing after it.
			rest, last := 0, c.FreeAt[len(c.FreeAt)-1].At
			for _, f := range c.FreeAt[protocol.MaxFreeAt-1:] {
				rest += f.GPUs
			}
			c.FreeAt = c.FreeAt[:protocol.MaxFreeAt]
			c.FreeAt[protocol.MaxFreeAt-1] = protocol.FreeAt{At: last, GPUs: min(rest, c.GPUs)}
		}
		a := askOf(n.policy, contract.Class{Model: c.Model, MinMemoryMiB: c.MemoryMiB}, st)
		c.P, c.Q = a.P, a.Q
		if i == 0 || a.MaxTimeLimit > time.Duration(out.MaxTimeLimit) {
			out.MaxTimeLimit = contract.Duration(a.MaxTimeLimit)
		}
		out.Preempts = out.Preempts || a.Preempts
		out.Books = out.Books || a.Books
	}
	slices.SortStableFunc(out.Classes, func(x, y protocol.ClassAsk) int {
		return cmp.Or(cmp.Compare(x.Model, y.Model), cmp.Compare(x.MemoryMiB, y.MemoryMiB))
	})
	return out
}
