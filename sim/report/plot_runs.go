package report

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/bourse/bourse/sim/metrics"
)

// welfareVsRevenue is a scatter with one labelled point per run, so that
// a seed far from its policy's others stands out.
func welfareVsRevenue(gs []group) (*plot.Plot, error) {
	p := newPlot("Welfare and revenue", "revenue", "welfare")
	for i, g := range gs {
		pts := plotter.XYLabels{XYs: make(plotter.XYs, len(g.Runs)), Labels: make([]string, len(g.Runs))}
		for j, r := range g.Runs {
			pts.XYs[j].X, pts.XYs[j].Y = r.Summary.Revenue, r.Summary.Welfare
			pts.Labels[j] = fmt.Sprintf("%s/%d", g.Policy, r.Seed)
		}
		s, err := plotter.NewScatter(pts)
		if err != nil {
			return nil, err
		}
		_, s.GlyphStyle = style(i)
		labels, err := plotter.NewLabels(pts)
		if err != nil {
			return nil, err
		}
		labels.Offset = vg.Point{X: vg.Points(5), Y: vg.Points(-3)}
		p.Add(s, labels)
		p.Legend.Add(g.Policy, s)
	}
	pad(p, 0.08)
	return p, nil
}

// pad widens both axes by frac of their data range on each side, so that
// points at the edge, and their labels, are not cut off by the axes.
func pad(p *plot.Plot, frac float64) {
	dx, dy := (p.X.Max-p.X.Min)*frac, (p.Y.Max-p.Y.Min)*frac
	if dx == 0 {
		dx = 1
	}
	if dy == 0 {
		dy = 1
	}
	p.X.Min, p.X.Max = p.X.Min-dx, p.X.Max+dx
	p.Y.Min, p.Y.Max = p.Y.Min-dy, p.Y.Max+dy
}

// fairness is a grouped bar chart: for each policy, Jain's index of
// GPU-seconds beside Jain's index per unit of funding.
func fairness(gs []group) (*plot.Plot, error) {
	p := newPlot("Fairness (Jain's index)", "", "index (1 = even)")
	if err := barPairs(p, gs, bar{"GPU-seconds", func(s metrics.Summary) float64 { return s.JainGPU }},
		bar{"per funding", func(s metrics.Summary) float64 { return s.JainFunding }}); err != nil {
		return nil, err
	}
	p.Y.Min, p.Y.Max = 0, 1.15 // room above the bars for the legend
	return p, nil
}

// bar is one of a pair of bars a policy gets: a figure of its runs'
// summaries, drawn as their mean over seeds.
type bar struct {
	name string
	of   func(metrics.Summary) float64
}

// barPairs draws two bars side by side for each policy, with the legend
// top right.
func barPairs(p *plot.Plot, gs []group, bars ...bar) error {
	names := make([]string, len(gs))
	for i, g := range gs {
		names[i] = g.Policy
	}
	w := vg.Points(24)
	for k, b := range bars {
		vs := make(plotter.Values, len(gs))
		for i, g := range gs {
			xs := make([]float64, len(g.Runs))
			for j, r := range g.Runs {
				xs[j] = b.of(r.Summary)
			}
			vs[i] = spreadOf(xs).Mean
		}
		chart, err := plotter.NewBarChart(vs, w)
		if err != nil {
			return err
		}
		chart.Color = plotutil.Color(k)
		chart.LineStyle.Width = 0
		chart.Offset = vg.Length(2*k-1) * w / 2
		p.Add(chart)
		p.Legend.Add(b.name, chart)
	}
	p.NominalX(names...)
	// Half a slot either side, or the outer bars are cut by the axes.
	p.X.Min, p.X.Max = -0.5, float64(len(gs))-0.5
	p.Legend.Left = false
	return nil
}

// reserveVsPaid puts, per policy, what the servers' reserve prices would
// have charged per GPU-hour used beside what the contracts charged: the
// gap is the clients' bids above the reserve, which a price index alone
// shows as the servers' price.
func reserveVsPaid(gs []group) (*plot.Plot, error) {
	p := newPlot("Reserve and price paid", "", "per GPU-hour")
	if err := barPairs(p, gs, bar{"servers' reserve", func(s metrics.Summary) float64 { return 3600 * s.ReserveIndex }},
		bar{"paid (price index)", func(s metrics.Summary) float64 { return 3600 * s.PriceIndex }}); err != nil {
		return nil, err
	}
	p.Y.Min = 0
	p.Y.Max *= 1.2 // room above the bars for the legend
	return p, nil
}

// clientShares plots each client's share of the GPU-seconds against its
// share of the funding, with the diagonal where the two are equal. Each
// client is named once, beside the middle of its points (one per policy
// and seed).
func clientShares(gs []group) (*plot.Plot, error) {
	p := newPlot("Clients: GPU-seconds against funding", "share of funding (%)", "share of GPU-seconds (%)")
	top := 0.0
	type mean struct {
		x, y float64
		n    int
	}
	var names []string
	at := map[string]*mean{}
	for i, g := range gs {
		var pts plotter.XYs
		for _, r := range g.Runs {
			var funding, gpu float64
			for _, c := range r.Clients {
				funding += c.Funding
				gpu += c.GPUSeconds
			}
			if funding == 0 || gpu == 0 {
				continue // no share to speak of
			}
			for _, c := range r.Clients {
				x, y := 100*c.Funding/funding, 100*c.GPUSeconds/gpu
				pts = append(pts, plotter.XY{X: x, Y: y})
				top = max(top, x, y)
				m := at[c.ID]
				if m == nil {
					m = &mean{}
					at[c.ID] = m
					names = append(names, c.ID)
				}
				m.x, m.y, m.n = m.x+x, m.y+y, m.n+1
			}
		}
		if len(pts) == 0 {
			continue
		}
		s, err := plotter.NewScatter(pts)
		if err != nil {
			return nil, err
		}
		_, s.GlyphStyle = style(i)
		p.Add(s)
		p.Legend.Add(g.Policy, s)
	}
	if top > 0 {
		diag, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: top, Y: top}})
		if err != nil {
			return nil, err
		}
		diag.LineStyle.Dashes = []vg.Length{vg.Points(4), vg.Points(4)}
		diag.LineStyle.Color = color.Gray{Y: 128}
		p.Add(diag)
		p.Legend.Add("share = funding", diag)
	}
	// Room on the right for the outermost points and their names, which
	// the axis would otherwise cut, and above for the legend.
	p.X.Min, p.Y.Min = 0, 0
	p.X.Max, p.Y.Max = 1.15*top, 1.15*top
	legendRoom(p, len(gs)+1)
	if len(names) > 0 {
		named := plotter.XYLabels{XYs: make(plotter.XYs, len(names)), Labels: names}
		for i, id := range names {
			m := at[id]
			named.XYs[i] = plotter.XY{X: m.x / float64(m.n), Y: m.y / float64(m.n)}
		}
		// A line of text is about a twentieth of the plot's height.
		unstack(named.XYs, 0.05*p.X.Max, 0.05*p.Y.Max)
		labels, err := plotter.NewLabels(named)
		if err != nil {
			return nil, err
		}
		labels.Offset = vg.Point{X: vg.Points(6), Y: vg.Points(4)}
		p.Add(labels)
	}
	return p, nil
}

// unstack moves labels at xys up, where they would print over each other:
// of labels less than dx apart across, each is at least dy above the one
// below it. Clients of equal funding share an x, and their names would
// otherwise be one smudge.
func unstack(xys plotter.XYs, dx, dy float64) {
	order := make([]int, len(xys))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(xys[a].Y, xys[b].Y) })
	for k, i := range order {
		for _, j := range order[:k] {
			if math.Abs(xys[i].X-xys[j].X) < dx && xys[i].Y < xys[j].Y+dy {
				xys[i].Y = xys[j].Y + dy
			}
		}
	}
}
