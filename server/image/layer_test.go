package image

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
)

// names lists a directory, or fails.
func names(tb testing.TB, d string) []string {
	tb.Helper()
	des, err := os.ReadDir(d)
	if err != nil {
		tb.Fatal(err)
	}
	var n []string
	for _, de := range des {
		n = append(n, de.Name())
	}
	return n
}

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
	plain := tarOf(t, file("f", "content"))
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
			u := &unpacker{maxBytes: 1 << 20, maxFiles: 10, op: "test", log: slog.New(slog.DiscardHandler)}
			if err := u.open(root); err != nil {
				t.Fatal(err)
			}
			defer u.close()
			src := &eofReader{r: bytes.NewReader(b)}
			if err := u.apply(src); err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(filepath.Join(root, "f")); string(got) != "content" || !src.eof {
				t.Errorf("f %q, read to the end %v", got, src.eof)
			}
		})
	}
}

// FuzzUnpack: whatever bytes a layer holds, unpacking them writes nothing
// outside the root, and leaves in it only directories, files and
// symlinks, none setuid, setgid, sticky or writable but by its owner.
func FuzzUnpack(f *testing.F) {
	seeds := [][]ent{
		{dir("a/"), file("a/b", "x"), symlink("a/c", "b"), hardlink("a/d", "a/b")},
		{file("../escape", "x"), file("/abs", "y"), file("a/../../escape", "z")},
		{symlink("up", "../../../.."), file("up/through", "x"), symlink("root", "/"), file("root/through2", "y")},
		{symlink("out", "../outside"), file("out/pwned", "x"), hardlink("h", "out/sentinel"), hardlink("h2", "../outside/sentinel")},
		{symlink("loop", "loop"), file("loop/x", "y"), symlink("a", "b"), symlink("b", "a"), file("a/x", "y")},
		{file("f", "x"), dir("f/"), file("f/g", "y"), symlink("f", "/"), dir("f/")},
		{{tar.Header{Name: "dev/mem", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 1}, ""},
			{tar.Header{Name: "fifo", Typeflag: tar.TypeFifo}, ""},
			{tar.Header{Name: "suid", Typeflag: tar.TypeReg, Mode: 0o7777}, ""}},
		{file("d/x", "1"), file("d/.wh..wh..opq", ""), file(".wh.d", ""), file(".wh..", ""), file(".wh...", "")},
	}
	for _, s := range seeds {
		b := tarOf(f, s...)
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
		u := &unpacker{maxBytes: 1 << 20, maxFiles: 1000, op: "fuzz", log: slog.New(slog.DiscardHandler)}
		if err := u.open(root); err != nil {
			t.Fatal(err)
		}
		u.apply(bytes.NewReader(b)) // refused or not, contained
		u.close()

		if got := names(t, sandbox); !slices.Equal(got, []string{"outside", "root"}) {
			t.Errorf("beside the root: %v", got)
		}
		if got := names(t, outside); !slices.Equal(got, []string{"sentinel"}) {
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
