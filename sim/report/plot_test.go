package report

import (
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
