package console

import (
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
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
	assert.Contains(t, svg, `text-anchor="end">2.00<`, "the y axis halfway")
}
