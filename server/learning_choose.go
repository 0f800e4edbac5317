package server

import (
	"math"
	"math/rand/v2"
)

// choose draws the next level by Thompson sampling: for each level, a
// rate of starts, what a GPU-second earns and so what the level would
// earn an hour were it posted for good, each drawn from its posterior;
// the level whose draw earns most is posted. Each level is posted once
// first, in an order of the seed's, so that none is judged on its prior
// alone. l.mu is held.
func (l *Learning) choose() int {
	n := len(l.mults)
	if l.s.Epochs < n {
		if len(l.s.Sweep) != n { // the first epoch, or restored during the sweep
			l.s.Sweep = l.rng.Perm(n)
		}
		return l.s.Sweep[l.s.Epochs]
	}
	hold, price := l.perContract()
	rate := l.drawRates()
	spread := l.spread()
	gpus := float64(max(l.s.GPUs, 1))
	best, bestValue := 0, -1.0
	for k := range n {
		// What a GPU-second earns is drawn too: contracts differ widely
		// in what they earn, and a level judged on a few unlucky ones
		// must still be tried again now and then. Its posterior is taken
		// as a Gamma about the mean, of shape the contracts behind the
		// mean over the square of their coefficient of variation.
		shape := (float64(l.s.Levels[k].Ended) + priceWeight) / spread
		value, _ := earning(rate[k], hold[k], price[k]*gamma(l.rng, shape)/shape, gpus)
		if value > bestValue {
			best, bestValue = k, value
		}
	}
	return best
}

// drawRates draws each level's rate of starts a second of room from its
// posterior: a Gamma of the starts seen over the room it had, with a
// prior worth one start at the rate all levels together have seen (one
// start an epoch before any has). Demand falls as the price rises, so
// the draws are made non-increasing in the price: a cheaper level starts
// at least what a dearer one does, and a level seen only when demand was
// low is not believed below the dearer ones seen when it was high.
// l.mu is held.
func (l *Learning) drawRates() []float64 {
	prior := l.priorRoom()
	rate := make([]float64, len(l.s.Levels))
	for k, st := range l.s.Levels {
		rate[k] = gamma(l.rng, 1+float64(st.Starts)) / (prior + st.Room)
	}
	for k := len(rate) - 2; k >= 0; k-- {
		rate[k] = max(rate[k], rate[k+1])
	}
	return rate
}

// How much the pooled estimates weigh against a level's own, in
// contracts: a job's size is its client's, hardly its price's, so a level
// is believed to hold what all levels' contracts hold until twenty of its
// own say otherwise; what a GPU-second earns follows the price, and five
// contracts' worth of GPU-seconds shrink it towards the pooled rate times
// the level's multiplier.
const (
	holdWeight  = 20
	priceWeight = 5
)

// perContract is, for each level, how many GPU-seconds a contract started
// there holds (GPUs × T) and what each of them earns, on average: its
// ended contracts' figures shrunk towards all levels' (the earnings
// scaled by the level's multiplier). Before any contract has ended, one
// GPU for an hour at the base price times the multiplier. l.mu is held.
func (l *Learning) perContract() (hold, price []float64) {
	n := len(l.mults)
	hold, price = make([]float64, n), make([]float64, n)
	var ended, held, revenue, heldAtPrice float64
	for k, st := range l.s.Levels {
		ended += float64(st.Ended)
		held += st.Held
		revenue += st.Revenue.InexactFloat64()
		heldAtPrice += st.Held * l.mults[k].InexactFloat64()
	}
	// Before any contract ends: a GPU for an hour at the base price.
	holdPool, pricePool, meanMult := 3600.0, l.unit, 1.0
	if ended > 0 && held > 0 {
		holdPool, pricePool, meanMult = held/ended, revenue/held, heldAtPrice/held
	}
	for k, st := range l.s.Levels {
		// A GPU-second at a dearer level than the contracts seen earns
		// in proportion to its price; at a cheaper one, as much as they
		// did: clients whose offers pay more than the reserve pay their
		// offers, so a lower reserve need not earn less, and a prior that
		// said so would keep the learner from trying it.
		prior := pricePool * max(1, l.mults[k].InexactFloat64()/meanMult)
		hold[k] = (st.Held + holdWeight*holdPool) / (float64(st.Ended) + holdWeight)
		price[k] = (st.Revenue.InexactFloat64() + priceWeight*holdPool*prior) / (st.Held + priceWeight*holdPool)
	}
	return hold, price
}

// earning is what a level earns a second, and how many GPUs it keeps
// busy, were it posted all the time, for a rate of starts a second of
// room. Work comes at rate·hold GPUs' worth to an empty server, and in
// the share of GPUs free to a busier one, so it keeps busy the GPUs
// where what comes in balances what ends: a full server sells no more
// however many offers pay its price. l.mu is held.
func earning(rate, hold, price, gpus float64) (perSecond, busy float64) {
	load := rate * hold
	busy = load * gpus / (gpus + load)
	return busy * price, busy
}

// gamma draws from Gamma(shape, 1), shape > 0, by Marsaglia and Tsang's
// method (below a shape of 1, a draw of shape+1 times U^(1/shape)), from
// r alone: the same stream gives the same draws.
func gamma(r *rand.Rand, shape float64) float64 {
	if shape < 1 {
		return gamma(r, shape+1) * math.Pow(r.Float64(), 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := r.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}

// spread is the square of the coefficient of variation of what one
// contract earns, over all levels' ended contracts (0.1 to maxSpread,
// and 1 before two have ended). l.mu is held.
func (l *Learning) spread() float64 {
	var n, sum, squares float64
	for _, st := range l.s.Levels {
		n += float64(st.Ended)
		sum += st.Revenue.InexactFloat64()
		squares += st.Squares
	}
	if n < 2 || sum <= 0 {
		return 1
	}
	mean := sum / n
	return min(max(squares/n/(mean*mean)-1, 0.1), maxSpread)
}

// maxSpread bounds spread: a coefficient of variation of 10 is past any
// mix of jobs, and keeps the shapes drawn from positive and finite.
const maxSpread = 100

// priorRoom is the seconds of room the prior's one start took: those all
// levels together took a start, or an epoch before any start. l.mu is
// held.
func (l *Learning) priorRoom() float64 {
	var starts, room float64
	for _, st := range l.s.Levels {
		starts += float64(st.Starts)
		room += st.Room
	}
	if starts > 0 && room > 0 {
		return room / starts
	}
	return l.cfg.Epoch.Seconds()
}
