package report

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/bourse/bourse/sim/metrics"
)

// Write puts the whole report into dir, creating it if need be:
// summary.json, summary.csv, series.csv, every plot as PNG and SVG, and
// an index.html that shows the table and the plots and links the rest.
// Files already in dir with other names are left alone.
func Write(dir string, rs []metrics.Result) error {
	if len(rs) == 0 {
		return errNoResults
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := writeFile(filepath.Join(dir, "summary.json"), func(w io.Writer) error {
		return JSON(w, rs)
	}); err != nil {
		return err
	}
	if err := CSV(dir, rs); err != nil {
		return err
	}
	if err := Plots(dir, rs); err != nil {
		return err
	}
	// index.html last: a folder that has one is a complete report.
	return writeFile(filepath.Join(dir, "index.html"), func(w io.Writer) error {
		return html(w, rs)
	})
}
