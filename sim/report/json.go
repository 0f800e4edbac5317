package report

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/bourse/bourse/sim/metrics"
)

// JSON writes the runs as an indented JSON array of metrics.Result, in the
// order every output uses (policy, then seed). encoding/json writes struct
// fields in declaration order and floats in their shortest form, so the
// same runs give the same bytes. Wall-clock figures are left out by the
// Result's own tags.
func JSON(w io.Writer, rs []metrics.Result) error {
	if len(rs) == 0 {
		return errNoResults
	}
	b, err := json.MarshalIndent(ordered(rs), "", "  ")
	if err != nil {
		// NaN and ±Inf have no JSON form; a run producing one is a bug
		// upstream worth hearing about rather than papering over.
		return fmt.Errorf("report: encode JSON: %w", err)
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("report: write JSON: %w", err)
	}
	return nil
}
