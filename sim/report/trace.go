package report

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/bourse/bourse/sim/workload"
)

// traceRows are the table's rows about a trace's rows, for runs that read
// one, and notes saying why rows were dropped or skipped: a researcher
// must know what of the trace the market never saw. Nothing for runs of a
// generator.
func traceRows(gs []group) (rows [][]string, notes []string) {
	some := false
	for _, g := range gs {
		for _, r := range g.Runs {
			some = some || r.Trace != nil
		}
	}
	if !some {
		return nil, nil
	}
	for _, m := range []struct {
		name string
		of   func(workload.Rows) float64
	}{
		{"trace rows read", func(t workload.Rows) float64 { return float64(t.Read) }},
		{"trace rows dropped", func(t workload.Rows) float64 { return float64(workload.Total(t.Dropped)) }},
		{"trace rows skipped", func(t workload.Rows) float64 { return float64(workload.Total(t.Skipped)) }},
	} {
		row := []string{m.name}
		for _, g := range gs {
			var xs []float64
			for _, r := range g.Runs {
				if r.Trace != nil {
					xs = append(xs, m.of(*r.Trace))
				}
			}
			if len(xs) == 0 {
				row = append(row, "")
				continue
			}
			row = append(row, cell(spreadOf(xs), count))
		}
		rows = append(rows, row)
	}
	// One note when every run read the same rows, the usual case (one
	// trace, read whole); else one per run that read a trace.
	var first *workload.Rows
	same := true
	for _, g := range gs {
		for _, r := range g.Runs {
			switch {
			case r.Trace == nil:
			case first == nil:
				first = r.Trace
			case !reflect.DeepEqual(*first, *r.Trace):
				same = false
			}
		}
	}
	if same {
		return rows, []string{"Trace: " + rowsNote(*first) + "."}
	}
	for _, g := range gs {
		for _, r := range g.Runs {
			if r.Trace != nil {
				notes = append(notes, fmt.Sprintf("Trace, %s seed %d: %s.", g.Policy, r.Seed, rowsNote(*r.Trace)))
			}
		}
	}
	return rows, notes
}

// rowsNote says what became of a trace's rows in words.
func rowsNote(t workload.Rows) string {
	return fmt.Sprintf("%s rows read, %s jobs; %s; %s", count(float64(t.Read)), count(float64(t.Jobs)),
		reasons("dropped", t.Dropped), reasons("skipped", t.Skipped))
}

func reasons(what string, cs []workload.RowCount) string {
	if len(cs) == 0 {
		return "none " + what
	}
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = count(float64(c.Rows)) + " " + c.Reason
	}
	return fmt.Sprintf("%s %s (%s)", count(float64(workload.Total(cs))), what, strings.Join(parts, ", "))
}
