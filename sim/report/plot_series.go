package report

import (
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

	"github.com/bourse/bourse/sim/metrics"
)

func priceOverTime(gs []group) (*plot.Plot, error) {
	p := newPlot("Price index", "hours", "price per GPU-hour")
	return p, addSeries(p, gs, func(pt metrics.Point) float64 { return 3600 * pt.Price })
}

func utilizationOverTime(gs []group) (*plot.Plot, error) {
	p := newPlot("Utilisation", "hours", "GPUs busy (%)")
	p.Y.Min, p.Y.Max = 0, 100
	return p, addSeries(p, gs, func(pt metrics.Point) float64 { return 100 * pt.Utilization })
}

// addSeries draws one line per policy: at each sampled hour, the mean of
// y over the seeds sampled then. Seeds of one scenario sample at the same
// virtual times, so this is a mean of like with like; a seed that ran
// shorter simply stops contributing.
func addSeries(p *plot.Plot, gs []group, y func(metrics.Point) float64) error {
	p.Add(plotter.NewGrid())
	for i, g := range gs {
		sum := map[float64]float64{}
		n := map[float64]int{}
		for _, r := range g.Runs {
			for _, pt := range r.Series {
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
