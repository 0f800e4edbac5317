package report

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/bourse/bourse/internal/safecsv"
	"github.com/bourse/bourse/sim/metrics"
)

// summaryHeader names summary.csv's columns as the JSON does, so a
// column means the same in either file.
var summaryHeader = []string{
	"scenario", "policy", "seed",
	"jobs", "completed", "rejected", "preempted", "deadline_misses", "contracts",
	"revenue", "utilization",
	"wait_p50_s", "wait_p99_s", "jct_p50_s", "jct_p99_s",
	"surplus", "welfare", "price_index",
	"jain_gpu_seconds", "jain_per_funding", "rho_p50", "rho_p99",
	"no_match", "reserve_index",
}

var seriesHeader = []string{"policy", "seed", "hours", "price", "utilization", "running", "queued"}

// CSV writes summary.csv, one row per run, and series.csv, one row per
// sampled point of every run, into dir. Figures are in the Result's own
// units (seconds, shares in [0, 1], price per GPU-second) and floats in
// their shortest exact form, so the files are for tools, not for reading.
func CSV(dir string, rs []metrics.Result) error {
	if len(rs) == 0 {
		return errNoResults
	}
	rs = ordered(rs)
	if err := writeFile(filepath.Join(dir, "summary.csv"), func(w io.Writer) error {
		return summaryCSV(w, rs)
	}); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, "series.csv"), func(w io.Writer) error {
		return seriesCSV(w, rs)
	})
}

func summaryCSV(w io.Writer, rs []metrics.Result) error {
	cw := safecsv.NewWriter(w)
	if err := cw.Write(summaryHeader); err != nil {
		return err
	}
	for _, r := range rs {
		s := r.Summary
		row := []string{r.Scenario, r.Policy, strconv.FormatUint(r.Seed, 10)}
		for _, n := range []int{s.Jobs, s.Completed, s.Rejected, s.Preempted, s.DeadlineMisses, s.Contracts} {
			row = append(row, strconv.Itoa(n))
		}
		for _, x := range []float64{
			s.Revenue, s.Utilization,
			s.WaitP50, s.WaitP99, s.JCTP50, s.JCTP99,
			s.Surplus, s.Welfare, s.PriceIndex,
			s.JainGPU, s.JainFunding, s.RhoP50, s.RhoP99,
		} {
			row = append(row, exact(x))
		}
		row = append(row, strconv.Itoa(s.NoMatch), exact(s.ReserveIndex))
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func seriesCSV(w io.Writer, rs []metrics.Result) error {
	cw := safecsv.NewWriter(w)
	if err := cw.Write(seriesHeader); err != nil {
		return err
	}
	for _, r := range rs {
		seed := strconv.FormatUint(r.Seed, 10)
		for _, p := range r.Series {
			if err := cw.Write([]string{
				r.Policy, seed, exact(p.Hours), exact(p.Price), exact(p.Utilization),
				strconv.Itoa(p.Running), strconv.Itoa(p.Queued),
			}); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// exact is the shortest decimal that reads back as the same float64.
func exact(x float64) string {
	return strconv.FormatFloat(x, 'g', -1, 64)
}

// writeFile creates path and fills it with fill, reporting the path in
// any error, since Write makes a dozen files and the caller needs to know
// which one failed.
func writeFile(path string, fill func(io.Writer) error) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("report: close %s: %w", path, cerr)
		}
	}()
	if err := fill(f); err != nil {
		return fmt.Errorf("report: write %s: %w", path, err)
	}
	return nil
}
