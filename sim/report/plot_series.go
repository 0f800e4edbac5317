package report

import (
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

	"github.com/bourse/bourse/sim/metrics"
)

// priceOverTime ends each run's line at its last arrival: after it the
// market only drains, and the few contracts still settling make jumps
// that no demand priced.
func priceOverTime(gs []group) (*plot.Plot, error) {
	p := newPlot("Price index", "hours", "price per GPU-hour")
	if err := addSeries(p, gs, func(pt metrics.Point) float64 { return 3600 * pt.Price }, untilLastArrival); err != nil {
		return nil, err
	}
	legendRoom(p, len(gs))
	return p, nil
}

func utilizationOverTime(gs []group) (*plot.Plot, error) {
	p := newPlot("Utilisation", "hours", "GPUs busy (%)")
	if err := addSeries(p, gs, func(pt metrics.Point) float64 { return 100 * pt.Utilization }, whole); err != nil {
		return nil, err
	}
	p.Y.Min, p.Y.Max = 0, 100
	legendRoom(p, len(gs))
	return p, nil
}

// whole is a run's whole series.
func whole(ps []metrics.Point) []metrics.Point { return ps }

// untilLastArrival is a run's series up to its last interval with an
// arrival; all of it where none says (results written before points
// counted arrivals).
func untilLastArrival(ps []metrics.Point) []metrics.Point {
	for i := len(ps) - 1; i >= 0; i-- {
		if ps[i].Arrivals > 0 {
			return ps[:i+1]
		}
	}
	return ps
}

// addSeries draws one line per policy: at each sampled hour, the mean of
// y over the seeds sampled then, each seed's series cut by span. Seeds of
// one scenario sample at the same virtual times, so this is a mean of
// like with like; a seed that ran shorter simply stops contributing.
func addSeries(p *plot.Plot, gs []group, y func(metrics.Point) float64, span func([]metrics.Point) []metrics.Point) error {
	p.Add(plotter.NewGrid())
	p.X.Tick.Marker = labelledTicks{n: 8}
	for i, g := range gs {
		sum := map[float64]float64{}
		n := map[float64]int{}
		for _, r := range g.Runs {
			for _, pt := range span(r.Series) {
				sum[pt.Hours] += y(pt)
				n[pt.Hours]++
			}
		}
		hours := make([]float64, 0, len(sum))
		for h := range sum {
			hours = append(hours, h)
		}
		slices.Sort(hours)
		xys := make(plotter.XYs, len(hours))
		for j, h := range hours {
			xys[j].X, xys[j].Y = h, sum[h]/float64(n[h])
		}
		if len(xys) == 0 {
			continue // a run without a series has no line to draw
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return err
		}
		l.LineStyle, _ = style(i)
		p.Add(l)
		p.Legend.Add(g.Policy, l)
	}
	return nil
}
