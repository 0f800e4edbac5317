package bidder_test

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/bidder"
)

func archive(t *testing.T, entries ...tar.Header) *bytes.Buffer {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, h := range entries {
		h.Mode = 0o644
		body := []byte(h.Linkname)
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(body))
		} else {
			body = nil
		}
		if h.Typeflag != tar.TypeSymlink {
			h.Linkname = ""
		}
		require.NoError(t, tw.WriteHeader(&h))
		_, err := tw.Write(body)
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	return &b
}

// TestExtractResults: files and directories come out under the folder;
// names that leave it, links and other kinds are refused; a link left in
// the folder beforehand does not lead a write outside it.
func TestExtractResults(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	// Linkname carries a regular file's body in these tests.
	got, err := bidder.ExtractResults(archive(t,
		tar.Header{Typeflag: tar.TypeDir, Name: "logs/"},
		tar.Header{Typeflag: tar.TypeReg, Name: "logs/loss.csv", Linkname: "1,0.5\n"},
		tar.Header{Typeflag: tar.TypeReg, Name: "model.bin", Linkname: "weights"},
	), dir)
	require.NoError(t, err)
	assert.Equal(t, []string{"logs/loss.csv", "model.bin"}, got)
	b, err := os.ReadFile(filepath.Join(dir, "logs", "loss.csv"))
	require.NoError(t, err)
	assert.Equal(t, "1,0.5\n", string(b))

	outside := t.TempDir()
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "escape")))
	for name, a := range map[string]*bytes.Buffer{
		"DotDot":      archive(t, tar.Header{Typeflag: tar.TypeReg, Name: "../evil", Linkname: "x"}),
		"Absolute":    archive(t, tar.Header{Typeflag: tar.TypeReg, Name: "/tmp/evil", Linkname: "x"}),
		"Symlink":     archive(t, tar.Header{Typeflag: tar.TypeSymlink, Name: "link", Linkname: "/etc/passwd"}),
		"ThroughLink": archive(t, tar.Header{Typeflag: tar.TypeReg, Name: "escape/evil", Linkname: "x"}),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := bidder.ExtractResults(a, dir)
			require.Error(t, err)
			if name != "ThroughLink" {
				assert.Equal(t, bourse.EInvalid, bourse.ErrorCode(err), "%v", err)
			}
			_, err = os.Stat(filepath.Join(outside, "evil"))
			assert.True(t, os.IsNotExist(err), "a file was written outside the folder")
		})
	}
}
