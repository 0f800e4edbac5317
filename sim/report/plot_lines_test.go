package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLinePlot draws on log axes what a log scale can show and leaves out
// what it cannot (zero, negative), a line of one point included, which
// gonum's own range would widen into zero; with nothing to show it says
// so rather than drawing an empty plot.
func TestLinePlot(t *testing.T) {
	dir := t.TempDir()
	axes := Axes{Title: "regret", X: "offers", Y: "revenue", LogX: true, LogY: true}
	require.NoError(t, LinePlot(dir, "regret", axes, []Line{
		{Name: "learner", X: []float64{10, 100, 1000}, Y: []float64{5, -2, 40}},
		{Name: "one point", X: []float64{100}, Y: []float64{7}, Points: true},
		{Name: "√T", X: []float64{10, 1000}, Y: []float64{4, 40}, Reference: true},
	}))
	svg, err := os.ReadFile(filepath.Join(dir, "regret.svg"))
	require.NoError(t, err)
	for _, name := range []string{"learner", "one point", "√T"} {
		assert.True(t, strings.Contains(string(svg), name), "the legend names %s", name)
	}
	_, err = os.Stat(filepath.Join(dir, "regret.png"))
	assert.NoError(t, err)

	require.NoError(t, LinePlot(dir, "single", axes, []Line{{Name: "alone", X: []float64{100}, Y: []float64{0.03}}}))

	err = LinePlot(dir, "empty", axes, []Line{{Name: "never positive", X: []float64{1, 2}, Y: []float64{0, -1}}})
	assert.Error(t, err)
}
