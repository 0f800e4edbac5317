package image

import (
	"archive/tar"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/bourse/bourse"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// pullLayers pushes an image of layers and pulls it.
func pullLayers(tb testing.TB, change func(*Config), layers ...v1.Layer) (*Store, *Image, error) {
	tb.Helper()
	reg := newRegistry(tb)
	reg.push(tb, "team/app:1", imageOf(tb, v1.Config{}, layers...))
	if change == nil {
		change = func(*Config) {}
	}
	s := openStore(tb, reg, change)
	img, err := s.Pull(context.Background(), reg.host+"/team/app:1")
	return s, img, err
}

// nowhereAbove fails tb if name is in dir or any folder above it: where a
// path that climbed out of an image's root would have written.
func nowhereAbove(tb testing.TB, dir, name string) {
	tb.Helper()
	for d := dir; ; d = filepath.Dir(d) {
		if exists(filepath.Join(d, name)) {
			tb.Errorf("%s was written outside the image", filepath.Join(d, name))
		}
		if d == filepath.Dir(d) {
			return
		}
	}
}

// TestPullContains: an archive's paths, links and special files reach
// nothing outside the image's root, and its modes are tamed. CI runs as
// root, where an escape would reach anything; as another user these run
// all the same.
func TestPullContains(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	if err := os.WriteFile(secret, []byte("host"), 0o600); err != nil {
		t.Fatal(err)
	}
	untouched := func(t *testing.T) {
		t.Helper()
		if got := names(t, outside); !slices.Equal(got, []string{"secret"}) {
			t.Errorf("outside the image: %v, want only secret", got)
		}
		var st syscall.Stat_t
		if err := syscall.Stat(secret, &st); err != nil || st.Nlink != 1 {
			t.Errorf("the host's file: %d links, %v", st.Nlink, err)
		}
	}
	refused := func(t *testing.T, s *Store, err error) {
		t.Helper()
		wantCode(t, err, bourse.EInvalidOffer)
		noLeftovers(t, s)
		untouched(t)
	}

	t.Run("DotDotPath", func(t *testing.T) {
		s, _, err := pullLayers(t, nil, layerOf(t, file("a/../../escape-dotdot", "x")))
		refused(t, s, err)
		nowhereAbove(t, s.cfg.CacheDir, "escape-dotdot")
	})
	t.Run("AbsolutePath", func(t *testing.T) {
		_, img, err := pullLayers(t, nil, layerOf(t, file(outside+"/abs", "x")))
		if err != nil {
			t.Fatal(err)
		}
		if readFile(t, img, outside+"/abs") != "x" {
			t.Errorf("an absolute path is not under the root")
		}
		untouched(t)
	})
	t.Run("SymlinkEscapeThenWrite", func(t *testing.T) {
		// The symlink to the host's folder, which the root lacks,
		// dangles: writing through it is refused, as under chroot.
		s, _, err := pullLayers(t, nil, layerOf(t, symlink("abs", outside), file("abs/through-abs", "x")))
		refused(t, s, err)
		// With the folder in the root, and one climbing far up, the
		// writes land in the root, across layers or within one.
		_, img, err := pullLayers(t, nil,
			layerOf(t, dir(outside), symlink("abs", outside), symlink("up", "../../../../../../../.."),
				file("abs/through-abs", "x")),
			layerOf(t, file("up/through-up", "y")))
		if err != nil {
			t.Fatal(err)
		}
		if readFile(t, img, outside+"/through-abs") != "x" || readFile(t, img, "through-up") != "y" {
			t.Errorf("writes through symlinks did not land in the root")
		}
		untouched(t)
		nowhereAbove(t, filepath.Dir(img.RootFS), "through-up")
	})
	t.Run("HardlinkOutside", func(t *testing.T) {
		for _, target := range []string{"../../../../../../.." + secret, secret, "via/secret"} {
			s, _, err := pullLayers(t, nil, layerOf(t, symlink("via", outside), hardlink("h", target)))
			refused(t, s, err)
		}
	})
	t.Run("HardlinkInside", func(t *testing.T) {
		_, img, err := pullLayers(t, nil, layerOf(t, file("a", "shared")), layerOf(t, hardlink("b", "/a")))
		if err != nil {
			t.Fatal(err)
		}
		var a, b syscall.Stat_t
		syscall.Stat(filepath.Join(img.RootFS, "a"), &a)
		syscall.Stat(filepath.Join(img.RootFS, "b"), &b)
		if a.Ino != b.Ino || a.Nlink != 2 {
			t.Errorf("b is not a hard link to a: inodes %d %d, %d links", a.Ino, b.Ino, a.Nlink)
		}
	})
	t.Run("DeviceNode", func(t *testing.T) {
		_, img, err := pullLayers(t, nil, layerOf(t,
			ent{Header: tar.Header{Name: "dev/mem", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 1, Mode: 0o666}},
			ent{Header: tar.Header{Name: "dev/sda", Typeflag: tar.TypeBlock, Devmajor: 8, Mode: 0o666}},
			ent{Header: tar.Header{Name: "run/fifo", Typeflag: tar.TypeFifo, Mode: 0o666}},
			file("etc/kept", "x")))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"dev/mem", "dev/sda", "run/fifo"} {
			if exists(filepath.Join(img.RootFS, p)) {
				t.Errorf("%s was made", p)
			}
		}
		if readFile(t, img, "etc/kept") != "x" {
			t.Errorf("the image's other files are missing")
		}
	})
	t.Run("SetuidBit", func(t *testing.T) {
		mode := func(name string, typ byte, m int64) ent {
			return ent{Header: tar.Header{Name: name, Typeflag: typ, Mode: m, Uid: 1234, Gid: 1234}}
		}
		_, img, err := pullLayers(t, nil, layerOf(t,
			mode("bin/su", tar.TypeReg, 0o4755), mode("bin/sg", tar.TypeReg, 0o2711),
			mode("etc/shadow", tar.TypeReg, 0o666), mode("etc/secret", tar.TypeReg, 0o400),
			mode("tmp/", tar.TypeDir, 0o1777), mode("private/", tar.TypeDir, 0o700)))
		if err != nil {
			t.Fatal(err)
		}
		for p, want := range map[string]os.FileMode{"bin/su": 0o755, "bin/sg": 0o755, "etc/shadow": 0o644,
			"etc/secret": 0o644, "tmp": os.ModeDir | 0o755, "private": os.ModeDir | 0o755, ".": os.ModeDir | 0o755} {
			fi, err := os.Lstat(filepath.Join(img.RootFS, p))
			if err != nil || fi.Mode() != want {
				t.Errorf("%s: mode %v, %v; want %v", p, fi.Mode(), err, want)
				continue
			}
			if uid := fi.Sys().(*syscall.Stat_t).Uid; int(uid) != os.Geteuid() {
				t.Errorf("%s: owned by %d, want the puller, %d", p, uid, os.Geteuid())
			}
		}
	})
	t.Run("Whiteouts", func(t *testing.T) {
		_, img, err := pullLayers(t, nil,
			layerOf(t, file("a/x", "1"), file("a/y", "1"), file("b/z", "1"), file("c/old", "1"), file("d/old/deep", "1")),
			layerOf(t, file("a/.wh.x", ""), file(".wh.b", ""), file("nowhere/.wh.q", ""),
				file("c/.wh..wh..opq", ""), file("c/new", "2"),
				file("d/old/kept", "2"), file("d/.wh..wh..opq", "")))
		if err != nil {
			t.Fatal(err)
		}
		for d, want := range map[string][]string{"a": {"y"}, ".": {"a", "c", "d"}, "c": {"new"}, "d": {"old"}, "d/old": {"kept"}} {
			if got := names(t, filepath.Join(img.RootFS, d)); !slices.Equal(got, want) {
				t.Errorf("%s holds %v, want %v", d, got, want)
			}
		}
	})
	t.Run("UnpackBomb", func(t *testing.T) {
		huge := file("huge", "")
		huge.Size = 1 << 40
		s, _, err := pullLayers(t, nil, layerOf(t, huge))
		refused(t, s, err)
		s, _, err = pullLayers(t, func(c *Config) { c.MaxUnpacked = 1 << 20 },
			layerOf(t, file("zeros", strings.Repeat("\x00", 8<<20))))
		refused(t, s, err)
	})
	t.Run("TooManyFiles", func(t *testing.T) {
		var ents []ent
		for i := range 11 {
			ents = append(ents, file(strings.Repeat("f", i+1), ""))
		}
		s, _, err := pullLayers(t, func(c *Config) { c.MaxFiles = 10 }, layerOf(t, ents...))
		refused(t, s, err)
	})
}
