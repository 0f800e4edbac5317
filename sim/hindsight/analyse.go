package hindsight

import (
	"fmt"
	"math"
	"slices"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/sim/metrics"
)

// Report is what a benchmark found.
type Report struct {
	Setup
	// Runs are the runs to compare side by side: each seed's best fixed
	// price (labelled BestLabel), the learner's and the other policies',
	// in that order, each seed's in seed order.
	Runs []metrics.Result `json:"-"`
	// Levels are the fixed prices' revenue and welfare, means over seeds.
	Levels []Level `json:"levels"`
	// PerSeed pairs the runs of each seed.
	PerSeed []Seed `json:"seeds"`
	// Revenue and Welfare are the learner's over the best fixed price's of
	// the same seed (its revenue's best: the price in hindsight).
	Revenue, Welfare Spread `json:"-"`
	// Beats counts, per other policy, the seeds on which the learner
	// earned more.
	Beats map[string]int `json:"beats"`
	// Regret is the learner's regret as the offers grow, means over seeds.
	Regret []Point `json:"regret"`
}

// Level is a fixed price over the seeds.
type Level struct {
	Multiplier decimal.Decimal `json:"multiplier"`
	Revenue    float64         `json:"revenue"`
	Welfare    float64         `json:"welfare"`
	Best       int             `json:"best_on_seeds"` // seeds on which it earned the most
}

// Seed is one seed's runs: its best fixed price, and the revenue and
// welfare of each policy.
type Seed struct {
	Seed    uint64             `json:"seed"`
	Best    decimal.Decimal    `json:"best_multiplier"`
	Revenue map[string]float64 `json:"revenue"`
	Welfare map[string]float64 `json:"welfare"`
}

// Spread is a ratio over the seeds: its mean, least and greatest.
type Spread struct {
	Mean, Min, Max float64
}

// Point is the regret after Jobs arrivals: the offers the learner's
// clients had made per server by then, the best fixed price's revenue
// on that prefix (each seed's best, then the mean), the learner's,
// their difference, and the learner's share of the best.
type Point struct {
	Jobs            int     `json:"jobs"`
	OffersPerServer float64 `json:"offers_per_server"`
	Best            float64 `json:"best_revenue"`
	Learner         float64 `json:"learner_revenue"`
	Regret          float64 `json:"regret"`
	Ratio           float64 `json:"ratio"`
}

// Analyse pairs the runs of Plans by seed.
func Analyse(rs []metrics.Result, s Setup) (Report, error) {
	r := Report{Setup: s, Beats: map[string]int{}}
	at := map[string]map[uint64]metrics.Result{}
	for _, x := range rs {
		if at[x.Policy] == nil {
			at[x.Policy] = map[uint64]metrics.Result{}
		}
		at[x.Policy][x.Seed] = x
	}
	for _, label := range append(append([]string{LearnerLabel}, s.Others...), s.Grid...) {
		if len(at[label]) != len(s.Seeds) {
			return Report{}, fmt.Errorf("hindsight: %d runs of %s for %d seeds", len(at[label]), label, len(s.Seeds))
		}
	}
	r.Levels = make([]Level, len(s.Grid))
	var revenue, welfare []float64
	var best []metrics.Result
	for _, seed := range s.Seeds {
		k := 0
		for i, label := range s.Grid {
			if at[label][seed].Summary.Revenue > at[s.Grid[k]][seed].Summary.Revenue {
				k = i
			}
			r.Levels[i].Revenue += at[label][seed].Summary.Revenue / float64(len(s.Seeds))
			r.Levels[i].Welfare += at[label][seed].Summary.Welfare / float64(len(s.Seeds))
		}
		r.Levels[k].Best++
		b := at[s.Grid[k]][seed]
		b.Policy = BestLabel
		best = append(best, b)
		ps := Seed{Seed: seed, Best: s.Multipliers[k], Revenue: map[string]float64{BestLabel: b.Summary.Revenue}, Welfare: map[string]float64{BestLabel: b.Summary.Welfare}}
		learner := at[LearnerLabel][seed].Summary
		for _, label := range append([]string{LearnerLabel}, s.Others...) {
			ps.Revenue[label], ps.Welfare[label] = at[label][seed].Summary.Revenue, at[label][seed].Summary.Welfare
			if label != LearnerLabel && learner.Revenue > at[label][seed].Summary.Revenue {
				r.Beats[label]++
			}
		}
		r.PerSeed = append(r.PerSeed, ps)
		revenue = append(revenue, ratio(learner.Revenue, b.Summary.Revenue))
		welfare = append(welfare, ratio(learner.Welfare, b.Summary.Welfare))
	}
	for i := range r.Levels {
		r.Levels[i].Multiplier = s.Multipliers[i]
	}
	r.Revenue, r.Welfare = spreadOf(revenue), spreadOf(welfare)
	r.Runs = append(r.Runs, best...)
	for _, label := range append([]string{LearnerLabel}, s.Others...) {
		for _, seed := range s.Seeds {
			r.Runs = append(r.Runs, at[label][seed])
		}
	}
	r.Regret = regret(at, s)
	return r, nil
}

// regret is the learner's regret at each mark its runs share: against
// the best fixed price on the prefix of the workload that had arrived,
// each seed's, averaged over the seeds.
func regret(at map[string]map[uint64]metrics.Result, s Setup) []Point {
	marks := math.MaxInt
	for _, runs := range at {
		for _, x := range runs {
			marks = min(marks, len(x.Track))
		}
	}
	var out []Point
	n := float64(len(s.Seeds))
	for i := range marks {
		var p Point
		for _, seed := range s.Seeds {
			l := at[LearnerLabel][seed].Track[i]
			best := math.Inf(-1)
			for _, label := range s.Grid {
				best = max(best, at[label][seed].Track[i].Revenue)
			}
			p.Jobs = l.Jobs
			p.OffersPerServer += float64(l.Offers) / float64(max(s.Servers, 1)) / n
			p.Best += best / n
			p.Learner += l.Revenue / n
			p.Ratio += ratio(l.Revenue, best) / n
		}
		p.Regret = p.Best - p.Learner
		out = append(out, p)
	}
	return out
}

// At is the regret point whose offers per server are nearest to offers,
// and whether the runs came within a factor of 1.5 of it.
func (r Report) At(offers float64) (Point, bool) {
	if len(r.Regret) == 0 {
		return Point{}, false
	}
	i := slices.IndexFunc(r.Regret, func(p Point) bool { return p.OffersPerServer >= offers })
	switch {
	case i < 0:
		i = len(r.Regret) - 1
	case i > 0 && offers-r.Regret[i-1].OffersPerServer < r.Regret[i].OffersPerServer-offers:
		i--
	}
	p := r.Regret[i]
	return p, p.OffersPerServer >= offers/1.5 && p.OffersPerServer <= offers*1.5
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 1
	}
	return a / b
}

func spreadOf(xs []float64) Spread {
	if len(xs) == 0 {
		return Spread{}
	}
	s := Spread{Min: math.Inf(1), Max: math.Inf(-1)}
	for _, x := range xs {
		s.Mean += x / float64(len(xs))
		s.Min, s.Max = min(s.Min, x), max(s.Max, x)
	}
	return s
}
