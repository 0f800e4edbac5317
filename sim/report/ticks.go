package report

import (
	"math"
	"strconv"

	"gonum.org/v1/plot"
)

// labelledTicks labels at least n ticks at a round step (1, 2 or 5 times a
// power of ten), where gonum's default labels as few as three, with an
// unlabelled tick halfway between. None above upTo is labelled, where
// upTo is set: the room kept for the legend has no data to read off.
type labelledTicks struct {
	n    int
	upTo float64 // 0: label all
}

func (t labelledTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || t.n < 1 {
		return nil
	}
	step := roundStep((hi - lo) / float64(t.n))
	decimals := max(0, -int(math.Floor(math.Log10(step))))
	var ts []plot.Tick
	for i := math.Ceil(lo / step * 2); ; i++ {
		v := i * step / 2
		if v > hi+step*1e-9 {
			break
		}
		tick := plot.Tick{Value: v}
		if math.Mod(i, 2) == 0 && (t.upTo == 0 || v <= t.upTo+step*1e-9) {
			tick.Label = strconv.FormatFloat(v, 'f', decimals, 64)
		}
		ts = append(ts, tick)
	}
	return ts
}

// roundStep is the greatest of 1, 2 or 5 times a power of ten that is at
// most d.
func roundStep(d float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(d)))
	for _, m := range []float64{5, 2} {
		if m*p <= d {
			return m * p
		}
	}
	return p
}

// legendRoom raises the top of p's y axis so that the legend's rows (at
// the top) sit above the data rather than over it, and labels the y axis
// only up to the data's top.
func legendRoom(p *plot.Plot, rows int) {
	top := p.Y.Max
	free := math.Min(0.5, 0.07*float64(rows)+0.05) // of the plot's height
	p.Y.Max = p.Y.Min + (top-p.Y.Min)/(1-free)
	p.Y.Tick.Marker = labelledTicks{n: 4, upTo: top}
}
