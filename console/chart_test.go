package console

import (
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var tickRE = regexp.MustCompile(`class="tick" text-anchor="middle">([^<]+)<`)

// TestChartTimeTicks: a time axis is labelled at round times between its
// ends, as many as fit, none crowding an end's label; the y axis halfway
// too.
func TestChartTimeTicks(t *testing.T) {
	day := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	ticks := func(from, to time.Time) []string {
		svg := string(lineChart("t", []series{{Name: "s", At: []time.Time{from, to}, Y: []float64{0, 4}}}, 720, 200))
		var out []string
		for _, m := range tickRE.FindAllStringSubmatch(svg, -1) {
			out = append(out, m[1])
		}
		return out
	}
	assert.Equal(t, []string{"12:00", "14:00", "16:00", "18:00"}, ticks(day.Add(9*time.Hour+15*time.Minute), day.Add(21*time.Hour+15*time.Minute)),
		"every 2 hours; 10:00 and 20:00 too near the ends' labels")
	assert.Equal(t, []string{"10:02:00", "10:04:00", "10:06:00", "10:08:00"}, ticks(day.Add(10*time.Hour), day.Add(10*time.Hour+10*time.Minute)))
	assert.Equal(t, []string{"11-27", "11-29", "12-01", "12-03"}, ticks(day, day.Add(10*24*time.Hour)))
	svg := string(lineChart("t", []series{{Name: "s", At: []time.Time{day, day.Add(time.Hour)}, Y: []float64{0, 4}}}, 720, 200))
	assert.Contains(t, svg, `text-anchor="end">2<`, "the y axis halfway, a count")
}

// TestChartAxisLabels: a y axis's three labels are written alike: counts
// as whole numbers (GPUs read 8, not 8.00; an odd top is raised so that
// the middle is whole too), figures of 100 or more whole (560 beside 0,
// not 0.00), smaller ones with the places their largest needs.
func TestChartAxisLabels(t *testing.T) {
	day := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	labels := func(ys ...float64) []string {
		svg := string(lineChart("t", []series{{Name: "s", At: []time.Time{day, day.Add(time.Hour)}, Y: ys}}, 720, 200))
		var out []string
		for _, m := range regexp.MustCompile(`<text x="60" y="[\d.]+" class="tick" text-anchor="end">([^<]*)</text>`).FindAllStringSubmatch(svg, -1) {
			out = append(out, m[1])
		}
		return out
	}
	assert.Equal(t, []string{"8", "0", "4"}, labels(2, 8), "top, bottom, middle")
	assert.Equal(t, []string{"6", "0", "3"}, labels(1, 5))
	assert.Equal(t, []string{"560", "0", "280"}, labels(3.5, 560))
	assert.Equal(t, []string{"5.40", "0.00", "2.70"}, labels(1, 5.4))
	assert.Equal(t, []string{"0.014", "0.000", "0.007"}, labels(0.004, 0.014))
}

// TestChartLegend: a legend that does not fit beside the title goes in
// rows of its own under it, left to right, and the plot below them; one
// that fits stays on the title's row.
func TestChartLegend(t *testing.T) {
	day := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	at := []time.Time{day, day.Add(time.Hour)}
	two := []series{{Name: "median", At: at, Y: []float64{1, 2}}, {Name: "VWAP", At: at, Y: []float64{1, 2}}}
	svg := string(bandChart("prices", "", nil, two, 480, 180))
	assert.Regexp(t, `<text x="[\d.]+" y="16" class="legend l0">■ median</text><text x="[\d.]+" y="16" class="legend l1">■ VWAP</text>`, svg)
	svg = string(bandChart("prices per GPU-hour of a model with a long name in CRED", "", []band{{Name: "low–high", At: at, Lo: []float64{0, 1}, Hi: []float64{2, 3}}}, two, 480, 180))
	assert.Regexp(t, `<text x="64.0" y="32" class="legend lband">■ low–high</text>`, svg, "under the title")
	assert.Contains(t, svg, `<line x1="64" y1="40" x2="64" y2="152" class="axis"/>`, "the plot starts below the legend")
	xs := regexp.MustCompile(`<text x="([\d.]+)" y="32" class="legend`).FindAllStringSubmatch(svg, -1)
	require.Len(t, xs, 3)
	for i := 1; i < len(xs); i++ {
		a, _ := strconv.ParseFloat(xs[i-1][1], 64)
		b, _ := strconv.ParseFloat(xs[i][1], 64)
		assert.Greater(t, b-a, 40.0, "apart")
	}
}
