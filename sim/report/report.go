// Package report presents simulator runs: a terminal table, JSON and CSV
// for other tools, plots, and a folder with all of it behind an
// index.html. A comparison is a []metrics.Result, one per policy and
// seed; every output is a pure function of it, so the same runs give the
// same bytes and a report can be diffed or checked into a repository.
package report

import (
	"errors"
	"slices"
	"strings"

	"github.com/bourse/bourse/sim/metrics"
)

// errNoResults is returned by every output: an empty report is more
// likely a caller's mistake than something to print.
var errNoResults = errors.New("report: no results")

// group is one policy's runs, in seed order.
type group struct {
	Policy string
	Runs   []metrics.Result
}

// groups puts runs together by policy. Policies keep the order in which
// they first appear, so a baseline given first stays the first column;
// runs within a policy go by seed, so that simulations finishing in any
// order still give the same output.
func groups(rs []metrics.Result) []group {
	var gs []group
	at := map[string]int{}
	for _, r := range rs {
		i, ok := at[r.Policy]
		if !ok {
			i = len(gs)
			at[r.Policy] = i
			gs = append(gs, group{Policy: r.Policy})
		}
		gs[i].Runs = append(gs[i].Runs, r)
	}
	for _, g := range gs {
		slices.SortStableFunc(g.Runs, func(a, b metrics.Result) int {
			switch {
			case a.Seed < b.Seed:
				return -1
			case a.Seed > b.Seed:
				return 1
			}
			return 0
		})
	}
	return gs
}

// ordered is rs in the order every output lists runs: by policy as in
// groups, then by seed.
func ordered(rs []metrics.Result) []metrics.Result {
	out := make([]metrics.Result, 0, len(rs))
	for _, g := range groups(rs) {
		out = append(out, g.Runs...)
	}
	return out
}

// title names the comparison by its scenario, or scenarios if the caller
// mixed several, in the order they first appear.
func title(rs []metrics.Result) string {
	var names []string
	for _, r := range rs {
		if r.Scenario != "" && !slices.Contains(names, r.Scenario) {
			names = append(names, r.Scenario)
		}
	}
	if len(names) == 0 {
		return "simulation"
	}
	return strings.Join(names, ", ")
}
