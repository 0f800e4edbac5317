package report

import (
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot/plotter"
)

func TestPlots(t *testing.T) {
	dir := t.TempDir()
	if d := os.Getenv("REPORT_PLOTS"); d != "" {
		dir = d // to look at them
	}
	require.NoError(t, Plots(dir, fixture()))
	for _, f := range figures {
		t.Run(f.Name, func(t *testing.T) {
			file, err := os.Open(filepath.Join(dir, f.Name+".png"))
			require.NoError(t, err)
			defer file.Close()
			img, err := png.Decode(file)
			require.NoError(t, err)
			b := img.Bounds() // 7×4 inches at 96 dpi
			assert.Equal(t, 672, b.Dx())
			assert.Equal(t, 384, b.Dy())

			svg, err := os.ReadFile(filepath.Join(dir, f.Name+".svg"))
			require.NoError(t, err)
			assert.Contains(t, string(svg), "<svg")
			assert.Contains(t, string(svg), "posted", "the legend names the policies")
		})
	}
}

// TestPlotLayout checks what a reader of the plots tripped on: the
// legend over the lines at 100%, three labelled hours, the price's last
// jumps after the last arrival, clients' points unnamed and cut at the
// right edge.
func TestPlotLayout(t *testing.T) {
	gs := groups(fixture())
	t.Run("LegendAboveTheData", func(t *testing.T) {
		p, err := utilizationOverTime(gs)
		require.NoError(t, err)
		assert.Greater(t, p.Y.Max, 120.0, "room above 100% for three legend rows")
		for _, tk := range p.Y.Tick.Marker.Ticks(p.Y.Min, p.Y.Max) {
			if tk.Label != "" {
				assert.LessOrEqual(t, tk.Value, 100.0, "a label in the legend's room")
			}
		}
	})
	t.Run("HoursLabelled", func(t *testing.T) {
		p, err := utilizationOverTime(gs)
		require.NoError(t, err)
		var labels []string
		for _, tk := range p.X.Tick.Marker.Ticks(p.X.Min, p.X.Max) {
			if tk.Label != "" {
				labels = append(labels, tk.Label)
			}
		}
		assert.Equal(t, []string{"0", "2", "4", "6", "8", "10", "12", "14", "16", "18", "20", "22", "24"}, labels)
	})
	t.Run("PriceEndsAtTheLastArrival", func(t *testing.T) {
		p, err := priceOverTime(gs)
		require.NoError(t, err)
		assert.Equal(t, 19.5, p.X.Max, "the 40th half-hour, the last with an arrival")
		u, err := utilizationOverTime(gs)
		require.NoError(t, err)
		assert.Equal(t, 24.5, u.X.Max, "utilisation shows the drain")
	})
	t.Run("ClientsNamedAndInside", func(t *testing.T) {
		p, err := clientShares(gs)
		require.NoError(t, err)
		top := 0.0
		for _, g := range gs {
			for _, r := range g.Runs {
				funding := 0.0
				for _, c := range r.Clients {
					funding += c.Funding
				}
				for _, c := range r.Clients {
					top = max(top, 100*c.Funding/funding)
				}
			}
		}
		assert.GreaterOrEqual(t, p.X.Max, 1.1*top, "room right of the outermost points for their names")
		dir := t.TempDir()
		require.NoError(t, savePlot(dir, "clients", p))
		svg, err := os.ReadFile(filepath.Join(dir, "clients.svg"))
		require.NoError(t, err)
		for _, id := range []string{"client-0", "client-1", "client-2", "client-3"} {
			assert.Equal(t, 1, strings.Count(string(svg), ">"+id+"<"), "%s named once", id)
		}
	})
}

// TestUnstack: names of clients at one x are stacked, each at least dy
// above the one below; one far across is left where it is.
func TestUnstack(t *testing.T) {
	xys := plotter.XYs{{X: 10, Y: 5}, {X: 10, Y: 5.5}, {X: 10.2, Y: 6}, {X: 30, Y: 5.2}}
	unstack(xys, 1, 2)
	assert.Equal(t, plotter.XYs{{X: 10, Y: 5}, {X: 10, Y: 7}, {X: 10.2, Y: 9}, {X: 30, Y: 5.2}}, xys)
}
