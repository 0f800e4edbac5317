package report

import (
	"html/template"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// linked is every src and href in an HTML page. A pattern is enough for
// a page this package writes itself, without a dependency for HTML.
var linked = regexp.MustCompile(`(?:src|href)="([^"]+)"`)

func TestWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	require.NoError(t, Write(dir, fixture()))

	page, err := os.ReadFile(filepath.Join(dir, "index.html"))
	require.NoError(t, err)
	assert.Contains(t, string(page), "<title>spot-burst</title>")
	assert.NotContains(t, string(page), "<script", "the page needs no JavaScript")

	var refs []string
	for _, m := range linked.FindAllStringSubmatch(string(page), -1) {
		refs = append(refs, m[1])
	}
	for _, want := range []string{"summary.json", "summary.csv", "series.csv"} {
		assert.Contains(t, refs, want)
	}
	for _, f := range figures {
		assert.Contains(t, refs, f.Name+".svg")
		assert.Contains(t, refs, f.Name+".png")
		assert.True(t, strings.Contains(string(page), template.HTMLEscapeString(f.Caption)), "caption of %s", f.Name)
	}
	for _, ref := range refs {
		assert.NotContains(t, ref, "//", "nothing is loaded from elsewhere")
		info, err := os.Stat(filepath.Join(dir, ref))
		if assert.NoError(t, err, ref) {
			assert.NotZero(t, info.Size(), ref)
		}
	}

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, len(refs)+1, "every file but index.html is linked from it")
}

// TestWriteDeterministic writes the same runs twice, the second time
// handed over in another order, and expects the same bytes in every file.
func TestWriteDeterministic(t *testing.T) {
	rs := fixture()
	a, b := t.TempDir(), t.TempDir()
	require.NoError(t, Write(a, rs))
	shuffled := append(rs[:0:0], rs...)
	shuffled[0], shuffled[2] = shuffled[2], shuffled[0]
	require.NoError(t, Write(b, shuffled))

	entries, err := os.ReadDir(a)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
		x, err := os.ReadFile(filepath.Join(a, e.Name()))
		require.NoError(t, err)
		y, err := os.ReadFile(filepath.Join(b, e.Name()))
		require.NoError(t, err)
		assert.True(t, string(x) == string(y), "%s differs between two writes", e.Name())
	}
	t.Log(strings.Join(names, " "))
}

func TestWriteEmpty(t *testing.T) {
	assert.ErrorIs(t, Write(t.TempDir(), nil), errNoResults)
}
