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

func archive(t *testing.T, entries ...tar.Header) *bytes.Reader {
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
	return bytes.NewReader(b.Bytes())
}

// bounds are an extraction's bounds in the tests: a megabyte, the default
// count of files.
var bounds = bidder.Extract{MaxBytes: 1 << 20}

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
	), dir, bounds)
	require.NoError(t, err)
	assert.Equal(t, []string{"logs/loss.csv", "model.bin"}, got)
	b, err := os.ReadFile(filepath.Join(dir, "logs", "loss.csv"))
	require.NoError(t, err)
	assert.Equal(t, "1,0.5\n", string(b))

	outside := t.TempDir()
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "escape")))
	for name, a := range map[string]*bytes.Reader{
		"DotDot":      archive(t, tar.Header{Typeflag: tar.TypeReg, Name: "../evil", Linkname: "x"}),
		"Absolute":    archive(t, tar.Header{Typeflag: tar.TypeReg, Name: "/tmp/evil", Linkname: "x"}),
		"Symlink":     archive(t, tar.Header{Typeflag: tar.TypeSymlink, Name: "link", Linkname: "/etc/passwd"}),
		"ThroughLink": archive(t, tar.Header{Typeflag: tar.TypeReg, Name: "escape/evil", Linkname: "x"}),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := bidder.ExtractResults(a, dir, bidder.Extract{MaxBytes: 1 << 20, Force: true})
			require.Error(t, err)
			if name != "ThroughLink" {
				assert.Equal(t, bourse.EInvalid, bourse.ErrorCode(err), "%v", err)
			}
			_, err = os.Stat(filepath.Join(outside, "evil"))
			assert.True(t, os.IsNotExist(err), "a file was written outside the folder")
		})
	}
}

// TestExtractBounds: an archive is checked whole before anything is
// written: its files' bytes and count within the bounds, no name twice,
// and no file of the folder's replaced without Force, which then writes
// the server's data anew, as a plain file.
func TestExtractBounds(t *testing.T) {
	reg := func(name, body string) tar.Header {
		return tar.Header{Typeflag: tar.TypeReg, Name: name, Linkname: body}
	}
	empty := func(t *testing.T, dir string) {
		t.Helper()
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		assert.Empty(t, entries, "a refused archive was written in part")
	}
	t.Run("Bytes", func(t *testing.T) {
		dir := t.TempDir()
		_, err := bidder.ExtractResults(archive(t, reg("a", "12345"), reg("b", "67890")), dir, bidder.Extract{MaxBytes: 9})
		assert.Equal(t, bourse.EInvalid, bourse.ErrorCode(err), "%v", err)
		empty(t, dir)
	})
	t.Run("ClaimedSize", func(t *testing.T) {
		// A header that claims more than the archive carries (a sparse
		// entry, or a truncated one) is refused by its claim.
		var b bytes.Buffer
		tw := tar.NewWriter(&b)
		require.NoError(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "big.bin", Mode: 0o644, Size: 1 << 30}))
		dir := t.TempDir()
		_, err := bidder.ExtractResults(bytes.NewReader(b.Bytes()), dir, bidder.Extract{MaxBytes: int64(b.Len())})
		assert.Equal(t, bourse.EInvalid, bourse.ErrorCode(err), "%v", err)
		empty(t, dir)
	})
	t.Run("Files", func(t *testing.T) {
		dir := t.TempDir()
		_, err := bidder.ExtractResults(archive(t, reg("a", "1"), reg("b", "2"), reg("c", "3")), dir, bidder.Extract{MaxBytes: 1 << 20, MaxFiles: 2})
		assert.Equal(t, bourse.EInvalid, bourse.ErrorCode(err), "%v", err)
		empty(t, dir)
	})
	t.Run("Twice", func(t *testing.T) {
		dir := t.TempDir()
		_, err := bidder.ExtractResults(archive(t, reg("a", "1"), reg("a", "2")), dir, bounds)
		assert.Equal(t, bourse.EInvalid, bourse.ErrorCode(err), "%v", err)
		empty(t, dir)
	})
	t.Run("Replace", func(t *testing.T) {
		dir := t.TempDir()
		hook := filepath.Join(dir, ".git", "hooks", "pre-commit")
		require.NoError(t, os.MkdirAll(filepath.Dir(hook), 0o755))
		require.NoError(t, os.WriteFile(hook, []byte("mine"), 0o755))
		a := archive(t, reg("new.txt", "new"), reg(".git/hooks/pre-commit", "theirs"))
		_, err := bidder.ExtractResults(a, dir, bounds)
		var re *bidder.ReplaceError
		require.ErrorAs(t, err, &re)
		assert.Equal(t, []string{".git/hooks/pre-commit"}, re.Files)
		assert.Equal(t, bourse.EInvalid, bourse.ErrorCode(err))
		got, _ := os.ReadFile(hook)
		assert.Equal(t, "mine", string(got))
		assert.NoFileExists(t, filepath.Join(dir, "new.txt"))

		_, err = a.Seek(0, 0)
		require.NoError(t, err)
		o := bounds
		o.Force = true
		wrote, err := bidder.ExtractResults(a, dir, o)
		require.NoError(t, err)
		assert.Equal(t, []string{"new.txt", ".git/hooks/pre-commit"}, wrote)
		got, _ = os.ReadFile(hook)
		assert.Equal(t, "theirs", string(got))
		fi, err := os.Stat(hook)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o644), fi.Mode().Perm()&^umask(t), "the replaced file kept its mode")
	})
}

// umask is the process's file mode creation mask.
func umask(t *testing.T) os.FileMode {
	t.Helper()
	f := filepath.Join(t.TempDir(), "probe")
	require.NoError(t, os.WriteFile(f, nil, 0o777))
	fi, err := os.Stat(f)
	require.NoError(t, err)
	return 0o777 &^ fi.Mode().Perm()
}
