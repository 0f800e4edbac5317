package hindsight

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"github.com/bourse/bourse/internal/safecsv"
	"github.com/bourse/bourse/sim/report"
)

// Table prints the runs side by side (the report's table: the best fixed
// price, the learner, the others), then what the benchmark found.
func Table(w io.Writer, r Report) error {
	if err := report.Table(w, r.Runs); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nfixed prices (× the base; mean revenue over %d seeds; seeds on which each earned most):\n", len(r.Seeds))
	for _, l := range r.Levels {
		fmt.Fprintf(w, "  ×%-9s revenue %12.2f  welfare %12.2f  best on %d\n", l.Multiplier, l.Revenue, l.Welfare, l.Best)
	}
	fmt.Fprintf(w, "revenue by seed (the best fixed price's multiple; each other as a share of the best fixed price's):\n")
	for _, ps := range r.PerSeed {
		fmt.Fprintf(w, "  seed %-4d ×%-9s %12.2f", ps.Seed, ps.Best, ps.Revenue[BestLabel])
		for _, label := range append([]string{LearnerLabel}, r.Others...) {
			fmt.Fprintf(w, "  %s %6.1f%%", label, 100*ratio(ps.Revenue[label], ps.Revenue[BestLabel]))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "learner / best fixed price of its seed: revenue %s, welfare %s\n", pct(r.Revenue), pct(r.Welfare))
	for _, o := range r.Others {
		fmt.Fprintf(w, "learner above %s on %d of %d seeds\n", o, r.Beats[o], len(r.Seeds))
	}
	for _, offers := range []float64{1_000, 10_000, 100_000} {
		if p, ok := r.At(offers); ok {
			fmt.Fprintf(w, "at %.0f offers per server (%d jobs): learner %.1f%% of the best fixed price on that prefix, regret %.2f\n",
				p.OffersPerServer, p.Jobs, 100*p.Ratio, p.Regret)
		}
	}
	if n := len(r.Regret); n > 0 {
		p := r.Regret[n-1]
		fmt.Fprintf(w, "at the last mark, %.0f offers per server (%d jobs): learner %.1f%% of the best fixed price, regret %.2f\n",
			p.OffersPerServer, p.Jobs, 100*p.Ratio, p.Regret)
	}
	return nil
}

func pct(s Spread) string {
	return fmt.Sprintf("%.1f%% (%.1f%%–%.1f%%)", 100*s.Mean, 100*s.Min, 100*s.Max)
}

// Write puts the report into dir: the runs compared (report.Write:
// index.html, summary.json and .csv, the plots), hindsight.json (every
// figure of Report), regret.csv, and the plots regret.svg (the regret
// against the offers per server, log-log), ratio.svg (the learner's
// revenue over the best fixed price's) and prices.svg (revenue at each
// fixed price, with the learner's and the others' as levels).
func Write(dir string, r Report) error {
	if err := report.Write(dir, r.Runs); err != nil {
		return err
	}
	data, err := json.MarshalIndent(struct {
		Report
		Revenue Spread `json:"revenue_ratio"`
		Welfare Spread `json:"welfare_ratio"`
	}{r, r.Revenue, r.Welfare}, "", "  ")
	if err != nil {
		return fmt.Errorf("hindsight: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hindsight.json"), append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("hindsight: %w", err)
	}
	if err := regretCSV(filepath.Join(dir, "regret.csv"), r); err != nil {
		return err
	}
	if err := regretPlot(dir, r); err != nil {
		return err
	}
	return pricesPlot(dir, r)
}

func regretCSV(path string, r Report) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("hindsight: %w", err)
	}
	w := safecsv.NewWriter(f)
	g := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	_ = w.Write([]string{"jobs", "offers_per_server", "best_revenue", "learner_revenue", "regret", "ratio"})
	for _, p := range r.Regret {
		_ = w.Write([]string{strconv.Itoa(p.Jobs), g(p.OffersPerServer), g(p.Best), g(p.Learner), g(p.Regret), g(p.Ratio)})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return fmt.Errorf("hindsight: %s: %w", path, err)
	}
	return f.Close()
}

// regretPlot draws the regret on log-log axes: where the learner earned
// less than the best fixed price on the prefix, the difference; where it
// earned more, that difference as a line of its own, since a log scale
// has no place for a regret below zero; with the slopes of √T and
// T^(2/3) through its greatest regret to read the rate by. ratio.svg
// draws the learner's revenue over the best fixed price's, with the
// issue's marks at 97% and 99%.
func regretPlot(dir string, r Report) error {
	var x, behind, ahead, ratio []float64
	top := -1
	for i, p := range r.Regret {
		x = append(x, p.OffersPerServer)
		behind = append(behind, p.Regret)
		ahead = append(ahead, -p.Regret)
		ratio = append(ratio, p.Ratio)
		if p.Regret > 0 && (top < 0 || p.Regret > r.Regret[top].Regret) {
			top = i
		}
	}
	if len(x) == 0 {
		return nil
	}
	lines := []report.Line{
		{Name: "learner behind: best fixed − learner revenue", X: x, Y: behind},
		{Name: "learner ahead: learner − best fixed revenue", X: x, Y: ahead},
	}
	if top >= 0 {
		for _, slope := range []struct {
			name string
			p    float64
		}{{"√T", 0.5}, {"T^(2/3)", 2.0 / 3}} {
			ref := make([]float64, len(x))
			for i := range x {
				ref[i] = behind[top] * math.Pow(x[i]/x[top], slope.p)
			}
			lines = append(lines, report.Line{Name: slope.name, X: x, Y: ref, Reference: true})
		}
	}
	if err := report.LinePlot(dir, "regret", report.Axes{Title: "Regret against the best fixed price in hindsight (" + r.Scenario + ")",
		X: "offers per server", Y: "revenue", LogX: true, LogY: true}, lines); err != nil {
		return fmt.Errorf("hindsight: regret plot: %w", err)
	}
	flat := func(name string, y float64) report.Line {
		return report.Line{Name: name, X: []float64{x[0], x[len(x)-1]}, Y: []float64{y, y}, Reference: true}
	}
	return report.LinePlot(dir, "ratio", report.Axes{Title: "Learner's revenue over the best fixed price's (" + r.Scenario + ")",
		X: "offers per server", Y: "learner / best fixed", LogX: true},
		[]report.Line{{Name: "learner / best fixed price", X: x, Y: ratio}, flat("99%", 0.99), flat("97%", 0.97)})
}

// pricesPlot draws revenue at each fixed price of the grid, the mean over
// seeds, and the learner's and the other policies' means as levels.
func pricesPlot(dir string, r Report) error {
	var x, y []float64
	for _, l := range r.Levels {
		x = append(x, l.Multiplier.InexactFloat64())
		y = append(y, l.Revenue)
	}
	lines := []report.Line{{Name: "fixed price", X: x, Y: y, Points: true}}
	for _, label := range append([]string{LearnerLabel}, r.Others...) {
		var mean float64
		for _, s := range r.PerSeed {
			mean += s.Revenue[label] / float64(len(r.PerSeed))
		}
		lines = append(lines, report.Line{Name: label, X: []float64{x[0], x[len(x)-1]}, Y: []float64{mean, mean}})
	}
	return report.LinePlot(dir, "prices", report.Axes{Title: "Revenue by fixed price (" + r.Scenario + "), mean over seeds",
		X: "multiple of the base price", Y: "revenue"}, lines)
}
