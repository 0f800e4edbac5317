package report

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func readCSV(tb testing.TB, path string) [][]string {
	tb.Helper()
	f, err := os.Open(path)
	require.NoError(tb, err)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	require.NoError(tb, err)
	return rows
}

func TestCSV(t *testing.T) {
	rs := fixture()
	dir := t.TempDir()
	require.NoError(t, CSV(dir, rs))

	summary := readCSV(t, filepath.Join(dir, "summary.csv"))
	require.Len(t, summary, 1+len(rs), "a header and one row per run")
	assert.Equal(t, summaryHeader, summary[0])
	assert.Equal(t, []string{"spot-burst", "posted", "1"}, summary[1][:3], "runs by policy, then seed")
	for _, row := range summary {
		assert.Len(t, row, len(summaryHeader))
	}
	first := ordered(rs)[0]
	rev, err := strconv.ParseFloat(summary[1][9], 64)
	require.NoError(t, err)
	assert.Equal(t, first.Summary.Revenue, rev, "floats read back exactly")

	series := readCSV(t, filepath.Join(dir, "series.csv"))
	require.Len(t, series, 1+50*len(rs))
	assert.Equal(t, []string{"policy", "seed", "hours", "price", "utilization", "running", "queued"}, series[0])
	assert.Equal(t, []string{"posted", "1", "0"}, series[1][:3])
}

func TestCSVMissingDir(t *testing.T) {
	err := CSV(filepath.Join(t.TempDir(), "absent"), fixture())
	assert.ErrorContains(t, err, "summary.csv")
}

// TestCSVInjection: names that would start a formula are written as text;
// negative numbers stay numbers.
func TestCSVInjection(t *testing.T) {
	rs := fixture()[:1]
	rs[0].Policy = "-cmd|' /C calc'!A0"
	rs[0].Summary.Surplus = -2.5
	dir := t.TempDir()
	require.NoError(t, CSV(dir, rs))
	summary := readCSV(t, filepath.Join(dir, "summary.csv"))
	assert.Equal(t, "'-cmd|' /C calc'!A0", summary[1][1])
	assert.Equal(t, "-2.5", summary[1][15], "surplus")
	series := readCSV(t, filepath.Join(dir, "series.csv"))
	assert.Equal(t, "'-cmd|' /C calc'!A0", series[1][0])
}
