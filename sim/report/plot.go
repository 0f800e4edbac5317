package report

import (
	"fmt"
	"io"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/bourse/bourse/sim/metrics"
)

// Every plot is drawn at one size so that they line up in index.html.
// The PNG resolution is fixed rather than left to gonum's default so that
// its pixel size is part of this package's contract.
const (
	plotWidth  = 7 * vg.Inch
	plotHeight = 4 * vg.Inch
	plotDPI    = 96
)

// figure is one plot: the file it goes to, and the caption index.html
// puts under it telling the reader what to look at.
type figure struct {
	Name    string // file name, without .png or .svg
	Caption string
	draw    func([]group) (*plot.Plot, error)
}

// figures is every plot Write makes, in the order index.html shows them.
var figures = []figure{
	{"price", "Price index per GPU-hour over the run, one line per policy (mean over seeds), up to the last arrival: " +
		"after it the market only drains, and the few contracts still settling price nothing. " +
		"Look for which policy prices higher, and whether prices settle or swing with the load.", priceOverTime},
	{"reserve", "Per policy, what the servers' reserve prices would have charged per GPU-hour of use (each contract at the reserve its server posted when it accepted) beside what the contracts charged (mean over seeds). " +
		"Contracts charge the client's offered curve, not the reserve: a client who bids its value pays its value when the reserve is lower.", reserveVsPaid},
	{"utilization", "Share of GPUs busy over the run, one line per policy (mean over seeds). " +
		"A policy that earns more while keeping GPUs idle is rationing, not allocating.", utilizationOverTime},
	{"welfare", "Welfare (value of what ran) against revenue, one point per policy and seed. " +
		"Up is better for everyone, right is better for the provider; the gap between the two is the clients' surplus.", welfareVsRevenue},
	{"fairness", "Jain's index of GPU-seconds per client, and of GPU-seconds per unit of funding, per policy (mean over seeds). " +
		"1 is perfectly even; per funding is the one a market should keep high.", fairness},
	{"clients", "Each client's share of GPU-seconds against its share of funding, per policy, every seed. " +
		"Points on the diagonal got what they paid for; above it, more than their money's worth.", clientShares},
}

// Plots draws every figure into dir, each as PNG and SVG. SVG has no
// timestamps or random ids and fonts are named, not embedded, so the
// same runs give byte-identical files; PNG encoding is deterministic too.
func Plots(dir string, rs []metrics.Result) error {
	if len(rs) == 0 {
		return errNoResults
	}
	gs := groups(rs)
	for _, f := range figures {
		p, err := f.draw(gs)
		if err != nil {
			return fmt.Errorf("report: plot %s: %w", f.Name, err)
		}
		if err := savePlot(dir, f.Name, p); err != nil {
			return err
		}
	}
	return nil
}

func savePlot(dir, name string, p *plot.Plot) error {
	svg := vgsvg.New(plotWidth, plotHeight)
	p.Draw(draw.New(svg))
	if err := writeFile(filepath.Join(dir, name+".svg"), func(w io.Writer) error {
		_, err := svg.WriteTo(w)
		return err
	}); err != nil {
		return err
	}
	img := vgimg.NewWith(vgimg.UseWH(plotWidth, plotHeight), vgimg.UseDPI(plotDPI))
	p.Draw(draw.New(img))
	return writeFile(filepath.Join(dir, name+".png"), func(w io.Writer) error {
		_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(w)
		return err
	})
}

// newPlot is a plot with a title, axis labels, and the legend top left,
// where time series start low and scatters are least likely to be.
func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Legend.Top = true
	p.Legend.Left = true
	return p
}

// style is the colour and glyph of the i-th policy, the same in every
// plot so a reader learns them once.
func style(i int) (line draw.LineStyle, glyph draw.GlyphStyle) {
	c := plotutil.Color(i)
	return draw.LineStyle{Color: c, Width: vg.Points(1.5)},
		draw.GlyphStyle{Color: c, Radius: vg.Points(3), Shape: plotutil.Shape(i)}
}
