package untar

import (
	"archive/tar"
	"bytes"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/internal/untar/untartest"
)

// filesOptions are a job's files' (package process): devices refused, no
// whiteouts, everything the job user's.
func filesOptions(owner *Owner) Options {
	return Options{MaxBytes: 1 << 20, MaxFiles: 100, Op: "test", Field: "job.files", What: "the files",
		Owner: owner, Log: slog.New(slog.DiscardHandler)}
}

// sandbox is a folder holding work, an existing folder to unpack into
// (mode 0700, as a job's), and outside, with a sentinel file.
func sandbox(tb testing.TB) (work, outside string) {
	tb.Helper()
	d := tb.TempDir()
	work, outside = filepath.Join(d, "work"), filepath.Join(d, "outside")
	for _, p := range []string{work, outside} {
		if err := os.Mkdir(p, 0o700); err != nil {
			tb.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "sentinel"), []byte("host"), 0o644); err != nil {
		tb.Fatal(err)
	}
	return work, outside
}

// walk calls fn with each path in dir, relative to it ("." for dir), and
// what Lstat says of it.
func walk(tb testing.TB, dir string, fn func(rel string, fi fs.FileInfo)) {
	tb.Helper()
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fn(rel, fi)
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
}

func unpackFiles(tb testing.TB, work string, opt Options, archive []byte) error {
	tb.Helper()
	u, err := Open(work, opt)
	if err != nil {
		tb.Fatal(err)
	}
	defer u.Close()
	return u.Apply(bytes.NewReader(archive))
}

// TestFilesRefused: a job's files are refused, and nothing written
// outside the folder, for a path out of it, a symlink that leads out, a
// device node, and more bytes or entries than the limits.
func TestFilesRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		ents func(outside string) []untartest.Entry
	}{
		{"PathOut", func(string) []untartest.Entry {
			return []untartest.Entry{untartest.File("ok", "x"), untartest.File("../outside/pwned", "x")}
		}},
		{"DeepPathOut", func(string) []untartest.Entry {
			return []untartest.Entry{untartest.File("a/b/../../../outside/pwned", "x")}
		}},
		{"SymlinkOut", func(outside string) []untartest.Entry {
			return []untartest.Entry{untartest.Symlink("link", outside), untartest.File("link/pwned", "x")}
		}},
		{"SymlinkUp", func(string) []untartest.Entry {
			return []untartest.Entry{untartest.Symlink("up", "../outside"), untartest.File("up/pwned", "x")}
		}},
		{"HardlinkOut", func(outside string) []untartest.Entry {
			return []untartest.Entry{untartest.Hardlink("h", filepath.Join(outside, "sentinel"))}
		}},
		{"DeviceNode", func(string) []untartest.Entry {
			return []untartest.Entry{untartest.Device("mem")}
		}},
		{"Fifo", func(string) []untartest.Entry {
			return []untartest.Entry{{Header: tar.Header{Name: "fifo", Typeflag: tar.TypeFifo, Mode: 0o666}}}
		}},
		{"TooManyBytes", func(string) []untartest.Entry {
			return []untartest.Entry{{Header: tar.Header{Name: "bomb", Typeflag: tar.TypeReg, Mode: 0o644, Size: 2 << 20}}}
		}},
		{"TooManyFiles", func(string) []untartest.Entry {
			var es []untartest.Entry
			for i := range 101 {
				es = append(es, untartest.File(string(rune('a'+i%26))+string(rune('a'+i/26)), ""))
			}
			return es
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			work, outside := sandbox(t)
			err := unpackFiles(t, work, filesOptions(nil), untartest.Tar(t, tc.ents(outside)...))
			if code := bourse.ErrorCode(err); code != bourse.EInvalidOffer {
				t.Fatalf("got %v (%s), want a refusal (invalid_offer)", err, code)
			}
			var be *bourse.Error
			if !errors.As(err, &be) || be.Field != "job.files" {
				t.Errorf("refusal %v: want field job.files", err)
			}
			if got := untartest.Names(t, outside); !slices.Equal(got, []string{"sentinel"}) {
				t.Errorf("outside the folder: %v", got)
			}
			if b, _ := os.ReadFile(filepath.Join(outside, "sentinel")); string(b) != "host" {
				t.Errorf("the sentinel was written: %q", b)
			}
		})
	}
}

// TestFilesTaken: a job's files unpack with their folders, files and
// links, owned by the job's user, without setuid, setgid or sticky bits;
// a whiteout's name is a file like another; the folder keeps its mode.
func TestFilesTaken(t *testing.T) {
	work, _ := sandbox(t)
	owner := &Owner{UID: 54321, GID: 54322}
	archive := untartest.Tar(t,
		untartest.Dir("data/"), untartest.File("data/train.csv", "1,2\n"),
		untartest.Symlink("latest", "data/train.csv"), untartest.Hardlink("data/copy.csv", "data/train.csv"),
		untartest.File("deep/er/file", "x"), untartest.File(".wh.kept", "not a whiteout"),
		untartest.Entry{Header: tar.Header{Name: "run.sh", Typeflag: tar.TypeReg, Mode: 0o4755}, Body: "#!/bin/sh\n"},
		untartest.Entry{Header: tar.Header{Name: "shared/", Typeflag: tar.TypeDir, Mode: 0o1777}})
	if err := unpackFiles(t, work, filesOptions(owner), archive); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(work, "latest")); err != nil || string(b) != "1,2\n" {
		t.Errorf("latest: %q, %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(work, ".wh.kept")); err != nil || string(b) != "not a whiteout" {
		t.Errorf(".wh.kept: %q, %v", b, err)
	}
	modes := map[string]fs.FileMode{}
	walk(t, work, func(rel string, fi fs.FileInfo) {
		modes[rel] = fi.Mode()
		st := fi.Sys().(*syscall.Stat_t)
		if rel != "." && (int(st.Uid) != owner.UID || int(st.Gid) != owner.GID) {
			t.Errorf("%s is %d:%d's, want the job user's %d:%d", rel, st.Uid, st.Gid, owner.UID, owner.GID)
		}
	})
	for p, want := range map[string]fs.FileMode{".": fs.ModeDir | 0o700, "run.sh": 0o755, "shared": fs.ModeDir | 0o755,
		"data/train.csv": 0o644, "deep/er": fs.ModeDir | 0o755} {
		if modes[p] != want {
			t.Errorf("%s: mode %v, want %v", p, modes[p], want)
		}
	}
}

// FuzzFiles: whatever bytes a job's files hold, unpacking them writes
// nothing outside the folder, and leaves in it only folders, files and
// symlinks, none setuid, setgid, sticky or writable but by its owner,
// each the job user's.
func FuzzFiles(f *testing.F) {
	seeds := [][]untartest.Entry{
		{untartest.Dir("a/"), untartest.File("a/b", "x"), untartest.Symlink("a/c", "b"), untartest.Hardlink("a/d", "a/b")},
		{untartest.File("../escape", "x"), untartest.File("/abs", "y")},
		{untartest.Symlink("out", "../outside"), untartest.File("out/pwned", "x"), untartest.Hardlink("h", "out/sentinel")},
		{untartest.Symlink("root", "/"), untartest.File("root/etc/x", "y"), untartest.Device("dev/mem")},
		{{Header: tar.Header{Name: "suid", Typeflag: tar.TypeReg, Mode: 0o7777}}, untartest.File(".wh..wh..opq", "")},
	}
	for _, s := range seeds {
		f.Add(untartest.Tar(f, s...))
	}
	owner := &Owner{UID: 54321, GID: 54322}
	f.Fuzz(func(t *testing.T, b []byte) {
		work, outside := sandbox(t)
		unpackFiles(t, work, filesOptions(owner), b) // refused or not, contained
		if got := untartest.Names(t, filepath.Dir(work)); !slices.Equal(got, []string{"outside", "work"}) {
			t.Errorf("beside the folder: %v", got)
		}
		if got := untartest.Names(t, outside); !slices.Equal(got, []string{"sentinel"}) {
			t.Errorf("outside the folder: %v", got)
		}
		walk(t, work, func(p string, fi fs.FileInfo) {
			m := fi.Mode()
			if !m.IsDir() && !m.IsRegular() && m&fs.ModeSymlink == 0 {
				t.Errorf("%s: a %v", p, m.Type())
			}
			if p == "." {
				return
			}
			if m&fs.ModeSymlink == 0 && (m&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) != 0 || m.Perm()&^0o755 != 0) {
				t.Errorf("%s: mode %v", p, m)
			}
			if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != owner.UID {
				t.Errorf("%s: owned by %d", p, st.Uid)
			}
		})
	})
}
