package lazyfs_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/internal/lazyfs"
)

// mount mounts a lazy file system over a fresh directory and returns it,
// the directory (the disk) and the mountpoint.
func mount(t *testing.T) (*lazyfs.FS, string, string) {
	t.Helper()
	lazyfs.Require(t)
	disk, mnt := t.TempDir(), t.TempDir()
	f, err := lazyfs.Mount(disk, mnt)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, f.Unmount()) })
	return f, disk, mnt
}

func write(t *testing.T, path string, flag int, data []byte, sync bool) {
	t.Helper()
	f, err := os.OpenFile(path, flag, 0o600)
	require.NoError(t, err)
	_, err = f.Write(data)
	require.NoError(t, err)
	if sync {
		require.NoError(t, f.Sync())
	}
	require.NoError(t, f.Close())
}

// same asserts that got is want, saying where they part rather than
// printing pages of bytes.
func same(t *testing.T, want, got []byte, msg string) {
	t.Helper()
	if bytes.Equal(want, got) {
		return
	}
	at := 0
	for at < min(len(want), len(got)) && want[at] == got[at] {
		at++
	}
	t.Errorf("%s: %d bytes where %d were wanted, the first difference at byte %d", msg, len(got), len(want), at)
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return data
}

// TestCrash: what was synced survives a crash, what was not is lost,
// and until then the mount shows both, closed or not.
func TestCrash(t *testing.T) {
	f, disk, mnt := mount(t)
	synced, later := bytes.Repeat([]byte("s"), 10000), bytes.Repeat([]byte("u"), 5000)
	write(t, filepath.Join(mnt, "a"), os.O_CREATE|os.O_WRONLY, synced, true)
	write(t, filepath.Join(mnt, "a"), os.O_WRONLY|os.O_APPEND, later, false)
	write(t, filepath.Join(mnt, "b"), os.O_CREATE|os.O_WRONLY, []byte("never synced"), false)
	write(t, filepath.Join(mnt, "c"), os.O_CREATE|os.O_WRONLY|os.O_SYNC, []byte("written with O_SYNC"), false)

	same(t, append(synced, later...), read(t, filepath.Join(mnt, "a")), "the mount shows what was written, synced or not")
	st, err := os.Stat(filepath.Join(mnt, "a"))
	require.NoError(t, err)
	assert.EqualValues(t, 15000, st.Size())
	assert.Equal(t, "never synced", string(read(t, filepath.Join(mnt, "b"))))
	same(t, synced, read(t, filepath.Join(disk, "a")), "the disk has only what was synced")
	assert.Positive(t, f.Unsynced())

	lost, err := f.Crash()
	require.NoError(t, err)
	assert.Positive(t, lost)
	same(t, synced, read(t, filepath.Join(disk, "a")), "a's synced part survives, its unsynced tail does not")
	assert.Empty(t, read(t, filepath.Join(disk, "b")), "b's name survives (names are on the disk at once), its contents do not")
	assert.Equal(t, "written with O_SYNC", string(read(t, filepath.Join(disk, "c"))))
}

// TestTruncate: a truncation is the cache's until a sync too, and a file
// extended past it reads zeros there, before and after the sync.
func TestTruncate(t *testing.T) {
	f, disk, mnt := mount(t)
	path := filepath.Join(mnt, "t")
	orig := bytes.Repeat([]byte("o"), 10000)
	write(t, path, os.O_CREATE|os.O_WRONLY, orig, true)
	require.NoError(t, os.Truncate(path, 100))
	write(t, path, os.O_WRONLY|os.O_APPEND, []byte("end"), false)
	h, err := os.OpenFile(path, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = h.WriteAt([]byte("x"), 6000)
	require.NoError(t, err)
	require.NoError(t, h.Close())

	want := make([]byte, 6001)
	copy(want, orig[:100])
	copy(want[100:], "end")
	want[6000] = 'x'
	same(t, want, read(t, path), "the mount shows the file as written")
	same(t, orig, read(t, filepath.Join(disk, "t")), "the truncation is not on the disk before a sync")

	h, err = os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	require.NoError(t, h.Sync())
	require.NoError(t, h.Close())
	same(t, want, read(t, filepath.Join(disk, "t")), "the disk has the file as synced")

	write(t, path, os.O_WRONLY|os.O_TRUNC, []byte("short"), false)
	assert.Equal(t, "short", string(read(t, path)))
	_, err = f.Crash()
	require.NoError(t, err)
	same(t, want, read(t, filepath.Join(disk, "t")), "an O_TRUNC open not synced is lost with the rest")
}

// TestRenameUnsynced: a file written, not synced and renamed over
// another is empty after a crash (the rename is on the disk, its data is
// not), which is why a careful program syncs before it renames.
func TestRenameUnsynced(t *testing.T) {
	f, disk, mnt := mount(t)
	write(t, filepath.Join(mnt, "meta"), os.O_CREATE|os.O_WRONLY, []byte("old, synced"), true)
	write(t, filepath.Join(mnt, "meta.tmp"), os.O_CREATE|os.O_WRONLY, []byte("new, not synced"), false)
	require.NoError(t, os.Rename(filepath.Join(mnt, "meta.tmp"), filepath.Join(mnt, "meta")))
	assert.Equal(t, "new, not synced", string(read(t, filepath.Join(mnt, "meta"))))
	_, err := f.Crash()
	require.NoError(t, err)
	assert.Empty(t, read(t, filepath.Join(disk, "meta")))
	assert.NoFileExists(t, filepath.Join(disk, "meta.tmp"))
}

// TestWriteback: a writeback puts every file's cache on the disk, even
// one no handle holds open, as a kernel's does.
func TestWriteback(t *testing.T) {
	f, disk, mnt := mount(t)
	write(t, filepath.Join(mnt, "w"), os.O_CREATE|os.O_WRONLY, []byte("written back"), false)
	require.NoError(t, f.Writeback())
	assert.Zero(t, f.Unsynced())
	write(t, filepath.Join(mnt, "w"), os.O_WRONLY|os.O_APPEND, []byte(", and lost"), false)
	lost, err := f.Crash()
	require.NoError(t, err)
	assert.EqualValues(t, 4096, lost, "one page")
	assert.Equal(t, "written back", string(read(t, filepath.Join(disk, "w"))))
}
