package report

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"github.com/bourse/bourse/sim/metrics"
)

// metric is one row of the table: a figure from a run's summary and the
// unit it reads in.
type metric struct {
	Name string
	Of   func(metrics.Summary) float64
	Unit unit
}

// metricRows is the table's rows, in the order a reader asks the
// questions: what did the market earn and how busy was it, what happened
// to the jobs, how long did they wait, who gained, and how fairly.
var metricRows = []metric{
	{"revenue", func(s metrics.Summary) float64 { return s.Revenue }, money},
	{"utilisation", func(s metrics.Summary) float64 { return s.Utilization }, percent},
	{"jobs completed", func(s metrics.Summary) float64 { return float64(s.Completed) }, count},
	{"jobs rejected", func(s metrics.Summary) float64 { return float64(s.Rejected) }, count},
	{"jobs preempted", func(s metrics.Summary) float64 { return float64(s.Preempted) }, count},
	{"offers per job", func(s metrics.Summary) float64 { return float64(s.Offers) / float64(max(s.Jobs, 1)) }, ratio},
	{"wait p50", func(s metrics.Summary) float64 { return s.WaitP50 }, duration},
	{"wait p99", func(s metrics.Summary) float64 { return s.WaitP99 }, duration},
	{"JCT p50", func(s metrics.Summary) float64 { return s.JCTP50 }, duration},
	{"JCT p99", func(s metrics.Summary) float64 { return s.JCTP99 }, duration},
	{"deadline misses", func(s metrics.Summary) float64 { return float64(s.DeadlineMisses) }, count},
	{"surplus", func(s metrics.Summary) float64 { return s.Surplus }, money},
	{"welfare", func(s metrics.Summary) float64 { return s.Welfare }, money},
	{"price index /GPU-h", func(s metrics.Summary) float64 { return s.PriceIndex }, perHour},
	{"reserve index /GPU-h", func(s metrics.Summary) float64 { return s.ReserveIndex }, perHour},
	{"Jain GPU-s", func(s metrics.Summary) float64 { return s.JainGPU }, ratio},
	{"Jain per funding", func(s metrics.Summary) float64 { return s.JainFunding }, ratio},
	{"ρ p50", func(s metrics.Summary) float64 { return s.RhoP50 }, ratio},
	{"ρ p99", func(s metrics.Summary) float64 { return s.RhoP99 }, ratio},
}

// optionalRows are rows shown only where some run has something to
// show: they speak of mistakes, and a table of zeros would bury them.
var optionalRows = []metric{
	{"jobs no server fits", func(s metrics.Summary) float64 { return float64(s.NoMatch) }, count},
}

// grid is the table as text cells, shared by the terminal and the HTML
// so that both always say the same.
type grid struct {
	Header []string   // "metric", then one per policy
	Rows   [][]string // a metric's name, then its cell per policy
	// Notes say how to read a cell with several seeds, and what became
	// of a trace's rows.
	Notes []string
}

func gridOf(rs []metrics.Result) grid {
	gs := groups(rs)
	g := grid{Header: []string{"metric"}}
	seeds := []string{"seeds"}
	several := false
	for _, gr := range gs {
		g.Header = append(g.Header, gr.Policy)
		seeds = append(seeds, count(float64(len(gr.Runs))))
		several = several || len(gr.Runs) > 1
	}
	g.Rows = append(g.Rows, seeds)
	for _, m := range metricRows {
		g.Rows = append(g.Rows, m.row(gs))
	}
	for _, m := range optionalRows {
		if slices.ContainsFunc(rs, func(r metrics.Result) bool { return m.Of(r.Summary) != 0 }) {
			g.Rows = append(g.Rows, m.row(gs))
		}
	}
	rows, notes := traceRows(gs)
	g.Rows = append(g.Rows, rows...)
	if several {
		g.Notes = append(g.Notes, "With several seeds a cell is the mean over seeds and, in brackets, the lowest–highest seed.")
	}
	g.Notes = append(g.Notes, notes...)
	return g
}

// row is the metric's name and its cell for each policy.
func (m metric) row(gs []group) []string {
	row := []string{m.Name}
	for _, gr := range gs {
		xs := make([]float64, len(gr.Runs))
		for i, r := range gr.Runs {
			xs[i] = m.Of(r.Summary)
		}
		row = append(row, cell(spreadOf(xs), m.Unit))
	}
	return row
}

// cell is a figure alone for one seed, or its mean and range for several.
func cell(s spread, u unit) string {
	if s.N <= 1 || s.Min == s.Max {
		return u(s.Mean)
	}
	return fmt.Sprintf("%s (%s–%s)", u(s.Mean), u(s.Min), u(s.Max))
}

// Table writes the runs as a terminal table, one column per policy and one
// row per metric. Several seeds of a policy share a column: the cell is
// their mean and, in brackets, the range from the lowest to the highest.
func Table(w io.Writer, rs []metrics.Result) error {
	if len(rs) == 0 {
		return errNoResults
	}
	g := gridOf(rs)
	if _, err := fmt.Fprintln(w, title(rs)); err != nil {
		return fmt.Errorf("report: write table: %w", err)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	line := func(cells []string) {
		for i, c := range cells {
			if i > 0 {
				fmt.Fprint(tw, "\t")
			}
			fmt.Fprint(tw, c)
		}
		fmt.Fprint(tw, "\n")
	}
	line(g.Header)
	for _, r := range g.Rows {
		line(r)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("report: write table: %w", err)
	}
	for _, n := range g.Notes {
		if _, err := fmt.Fprintln(w, n); err != nil {
			return fmt.Errorf("report: write table: %w", err)
		}
	}
	return nil
}
