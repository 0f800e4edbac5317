package untar

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/bourse/bourse/internal/untar/untartest"
)

// eofReader says whether its reader was read to its end.
type eofReader struct {
	r   io.Reader
	eof bool
}

func (e *eofReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	e.eof = e.eof || err == io.EOF
	return n, err
}

// TestApplyCompressions: a layer is gzip, zstd or a plain tar, whatever
// its media type says, and is read to its end past the archive's (where
// go-containerregistry checks its digest).
func TestApplyCompressions(t *testing.T) {
	plain := untartest.Tar(t, untartest.File("f", "content"))
	var gz, zs bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(plain)
	zw.Close()
	zsw, _ := zstd.NewWriter(&zs)
	zsw.Write(plain)
	zsw.Close()
	for name, b := range map[string][]byte{"plain": append(plain, make([]byte, 4096)...), "gzip": gz.Bytes(), "zstd": zs.Bytes()} {
		t.Run(name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "root")
			u, err := Create(root, Options{MaxBytes: 1 << 20, MaxFiles: 10, Op: "test", Log: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			defer u.Close()
			src := &eofReader{r: bytes.NewReader(b)}
			if err := u.Apply(src); err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(filepath.Join(root, "f")); string(got) != "content" || !src.eof {
				t.Errorf("f %q, read to the end %v", got, src.eof)
			}
		})
	}
}

// FuzzUnpack: whatever bytes a layer holds, unpacking them as an image's
// writes nothing outside the root, and leaves in it only directories,
// files and symlinks, none setuid, setgid, sticky or writable but by its
// owner. (FuzzFiles does the same for a job's files.)
func FuzzUnpack(f *testing.F) {
	seeds := [][]untartest.Entry{
		{untartest.Dir("a/"), untartest.File("a/b", "x"), untartest.Symlink("a/c", "b"), untartest.Hardlink("a/d", "a/b")},
		{untartest.File("../escape", "x"), untartest.File("/abs", "y"), untartest.File("a/../../escape", "z")},
		{untartest.Symlink("up", "../../../.."), untartest.File("up/through", "x"), untartest.Symlink("root", "/"), untartest.File("root/through2", "y")},
		{untartest.Symlink("out", "../outside"), untartest.File("out/pwned", "x"), untartest.Hardlink("h", "out/sentinel"), untartest.Hardlink("h2", "../outside/sentinel")},
		{untartest.Symlink("loop", "loop"), untartest.File("loop/x", "y"), untartest.Symlink("a", "b"), untartest.Symlink("b", "a"), untartest.File("a/x", "y")},
		{untartest.File("f", "x"), untartest.Dir("f/"), untartest.File("f/g", "y"), untartest.Symlink("f", "/"), untartest.Dir("f/")},
		{untartest.Device("dev/mem"), {Header: tar.Header{Name: "fifo", Typeflag: tar.TypeFifo}},
			{Header: tar.Header{Name: "suid", Typeflag: tar.TypeReg, Mode: 0o7777}}},
		{untartest.File("d/x", "1"), untartest.File("d/.wh..wh..opq", ""), untartest.File(".wh.d", ""), untartest.File(".wh..", ""), untartest.File(".wh...", "")},
	}
	for _, s := range seeds {
		b := untartest.Tar(f, s...)
		f.Add(b)
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		zw.Write(b)
		zw.Close()
		f.Add(z.Bytes())
	}
	rootBefore, err := os.ReadDir("/")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		sandbox := t.TempDir()
		outside := filepath.Join(sandbox, "outside")
		os.Mkdir(outside, 0o755)
		os.WriteFile(filepath.Join(outside, "sentinel"), []byte("host"), 0o644)
		root := filepath.Join(sandbox, "root")
		u, err := Create(root, Options{MaxBytes: 1 << 20, MaxFiles: 1000, Op: "fuzz", Whiteouts: true, SkipDevices: true, Log: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		u.Apply(bytes.NewReader(b)) // refused or not, contained
		u.Close()

		if got := untartest.Names(t, sandbox); !slices.Equal(got, []string{"outside", "root"}) {
			t.Errorf("beside the root: %v", got)
		}
		if got := untartest.Names(t, outside); !slices.Equal(got, []string{"sentinel"}) {
			t.Errorf("outside the root: %v", got)
		}
		if rootAfter, _ := os.ReadDir("/"); len(rootAfter) != len(rootBefore) {
			t.Errorf("/ holds %d names, before %d", len(rootAfter), len(rootBefore))
		}
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				t.Fatal(err)
			}
			fi, err := d.Info()
			if err != nil {
				t.Fatal(err)
			}
			m := fi.Mode()
			if !m.IsDir() && !m.IsRegular() && m&fs.ModeSymlink == 0 {
				t.Errorf("%s: a %v", p, m.Type())
			}
			if m&fs.ModeSymlink == 0 && (m&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) != 0 || m.Perm()&^0o755 != 0) {
				t.Errorf("%s: mode %v", p, m)
			}
			return nil
		})
	})
}
