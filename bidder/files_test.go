package bidder_test

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/bidder"
)

// folder makes a folder as a client's: a file, an executable, a
// subfolder, a link.
func folder(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "train.py"), []byte("print('hi')\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "run.sh"), []byte("#!/bin/sh\n"), 0o755))
	require.NoError(t, os.Chmod(filepath.Join(dir, "run.sh"), 0o4755))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "data"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "data", "x.csv"), []byte("1,2\n"), 0o600))
	require.NoError(t, os.Symlink("data/x.csv", filepath.Join(dir, "latest")))
	return dir
}

// TestPack: a folder packs to a tar of its folders, files and links, in
// name order, without setuid bits or owners, named by its digest and
// size; the same folder packs to the same archive.
func TestPack(t *testing.T) {
	dir := folder(t)
	var b bytes.Buffer
	f, err := bidder.Pack(dir, &b, 0)
	require.NoError(t, err)
	sum := sha256.Sum256(b.Bytes())
	assert.Equal(t, "sha256:"+hex.EncodeToString(sum[:]), f.Digest)
	assert.Equal(t, int64(b.Len()), f.Bytes)

	type entry struct {
		name string
		typ  byte
		mode int64
		body string
		link string
	}
	var got []entry
	tr := tar.NewReader(bytes.NewReader(b.Bytes()))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		body, _ := io.ReadAll(tr)
		assert.Zero(t, h.Uid+h.Gid, "%s: owned by no one", h.Name)
		got = append(got, entry{h.Name, h.Typeflag, h.Mode, string(body), h.Linkname})
	}
	assert.Equal(t, []entry{
		{"data/", tar.TypeDir, 0o755, "", ""},
		{"data/x.csv", tar.TypeReg, 0o600, "1,2\n", ""},
		{"latest", tar.TypeSymlink, 0o777, "", "data/x.csv"},
		{"run.sh", tar.TypeReg, 0o755, "#!/bin/sh\n", ""},
		{"train.py", tar.TypeReg, 0o644, "print('hi')\n", ""},
	}, got)

	var again bytes.Buffer
	f2, err := bidder.Pack(dir, &again, 0)
	require.NoError(t, err)
	assert.Equal(t, f, f2, "the same folder, the same archive")
}

// TestPackRefuses: a folder over the bound, a fifo in it, and what is
// not a folder are refused, saying so.
func TestPackRefuses(t *testing.T) {
	dir := folder(t)
	_, err := bidder.Pack(dir, io.Discard, 2048)
	assert.Equal(t, bourse.EInvalid, bourse.ErrorCode(err))
	assert.Contains(t, bourse.ErrorMessage(err), "packs to more than 2048 bytes")

	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644))
	_, err = bidder.Pack(dir, io.Discard, 0)
	assert.Equal(t, bourse.EInvalid, bourse.ErrorCode(err))
	assert.Contains(t, bourse.ErrorMessage(err), "pipe is not a file, a folder or a link")

	_, err = bidder.Pack(filepath.Join(dir, "train.py"), io.Discard, 0)
	assert.Contains(t, bourse.ErrorMessage(err), "is not a folder")
}
