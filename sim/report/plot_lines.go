package report

import (
	"errors"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Line is one named line of a LinePlot.
type Line struct {
	Name string
	X, Y []float64
	// Reference draws it dashed and grey: a guide to read the others by
	// (a slope, a level), not data.
	Reference bool
	// Points marks each point, for lines of few points.
	Points bool
}

// Axes are a LinePlot's title, labels and scales.
type Axes struct {
	Title, X, Y string
	// LogX and LogY draw an axis on a log scale; points at or below zero
	// there are left out, since a log scale has no place for them.
	LogX, LogY bool
}

// LinePlot draws lines into dir as name.svg and name.png, in the same size
// and colours as the report's other plots, so that a figure made beside a
// report (a learner's regret, docs/sim.md) reads like its own.
func LinePlot(dir, name string, a Axes, lines []Line) error {
	p := newPlot(a.Title, a.X, a.Y)
	p.Add(plotter.NewGrid())
	if a.LogX {
		p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	}
	if a.LogY {
		p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	}
	drawn, data := 0, 0
	lo, hi := plotter.XY{X: math.Inf(1), Y: math.Inf(1)}, plotter.XY{X: math.Inf(-1), Y: math.Inf(-1)}
	for _, ln := range lines {
		// A point a log scale cannot show breaks the line, rather than
		// being bridged by a segment that says nothing of what lay between.
		var runs []plotter.XYs
		var all plotter.XYs
		open := false
		for i := range min(len(ln.X), len(ln.Y)) {
			x, y := ln.X[i], ln.Y[i]
			if (a.LogX && x <= 0) || (a.LogY && y <= 0) || math.IsNaN(x) || math.IsNaN(y) {
				open = false
				continue
			}
			if !open {
				runs = append(runs, nil)
				open = true
			}
			runs[len(runs)-1] = append(runs[len(runs)-1], plotter.XY{X: x, Y: y})
			all = append(all, plotter.XY{X: x, Y: y})
			lo.X, lo.Y, hi.X, hi.Y = min(lo.X, x), min(lo.Y, y), max(hi.X, x), max(hi.Y, y)
		}
		if len(all) == 0 {
			continue
		}
		ls, glyph := style(data)
		if ln.Reference {
			ls = draw.LineStyle{Color: color.Gray{Y: 128}, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(4), vg.Points(4)}}
		} else {
			data++
		}
		for k, xys := range runs {
			l, err := plotter.NewLine(xys)
			if err != nil {
				return err
			}
			l.LineStyle = ls
			p.Add(l)
			if k == 0 {
				p.Legend.Add(ln.Name, l)
			}
		}
		if ln.Points && !ln.Reference {
			s, err := plotter.NewScatter(all)
			if err != nil {
				return err
			}
			s.GlyphStyle = glyph
			p.Add(s)
		}
		drawn++
	}
	if drawn == 0 {
		return errors.New("report: no line has a point to draw")
	}
	// A log axis is given its range, a little beyond the data's: gonum's
	// own widens a range of one value by one either side, into zero.
	if a.LogX {
		p.X.Min, p.X.Max = lo.X/1.2, hi.X*1.2
	}
	// Room above the lines for the legend, top left, as the report's
	// series have: a share of the height for each of its rows.
	free := math.Min(0.5, 0.07*float64(drawn)+0.05)
	if a.LogY {
		lo.Y, hi.Y = lo.Y/1.2, hi.Y*1.2
		p.Y.Min, p.Y.Max = lo.Y, lo.Y*math.Pow(hi.Y/lo.Y, 1/(1-free))
	} else {
		p.Y.Min, p.Y.Max = lo.Y, lo.Y+(hi.Y-lo.Y)/(1-free)
		p.Y.Tick.Marker = labelledTicks{n: 4, upTo: hi.Y}
	}
	return savePlot(dir, name, p)
}
