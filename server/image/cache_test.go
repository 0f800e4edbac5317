package image

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bourse/bourse"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// exists says whether p is there.
func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// entries are the names in a directory of the cache.
func entries(tb testing.TB, s *Store, d string) []string {
	tb.Helper()
	return names(tb, filepath.Join(s.cfg.CacheDir, d))
}

func TestEvictionLeastRecentlyUsed(t *testing.T) {
	reg := newRegistry(t)
	refs := map[string]string{}
	for _, n := range []string{"a", "b", "c", "d"} {
		reg.push(t, "team/"+n+":1", imageOf(t, v1.Config{}, layerOf(t, file("f", strings.Repeat(n, 1000)))))
		refs[n] = reg.host + "/team/" + n + ":1"
	}
	s := openStore(t, reg, func(c *Config) { c.MaxCacheBytes = 2500 })

	a := mustPull(t, s, refs["a"])
	s.Release(a)
	b := mustPull(t, s, refs["b"])
	s.Release(b)
	s.Release(mustPull(t, s, refs["a"])) // a used after b: b is the least recent
	c := mustPull(t, s, refs["c"])
	if exists(b.RootFS) || !exists(a.RootFS) || !exists(c.RootFS) {
		t.Fatalf("after c: a %v, b %v, c %v; want b evicted alone", exists(a.RootFS), exists(b.RootFS), exists(c.RootFS))
	}
	// c is in use and a is older than it: a goes, c stays.
	d := mustPull(t, s, refs["d"])
	if exists(a.RootFS) || !exists(c.RootFS) || !exists(d.RootFS) {
		t.Fatalf("after d: a %v, c %v, d %v; want a evicted, c kept in use", exists(a.RootFS), exists(c.RootFS), exists(d.RootFS))
	}
	if got := entries(t, s, tmpDir); len(got) != 0 {
		t.Errorf("tmp/ holds %v after eviction", got)
	}
	s.Release(c)
	s.Release(c) // a second Release does nothing
	if e := s.cached[c.Digest]; e == nil || e.refs != 0 {
		t.Fatalf("c after two Releases: %+v", e)
	}
}

func TestCacheOutlivesTheStore(t *testing.T) {
	reg := newRegistry(t)
	digest := reg.push(t, "team/app:1", imageOf(t, v1.Config{User: "1000"}, layerOf(t, file("f", "kept"))))
	s := openStore(t, reg)
	s.Release(mustPull(t, s, reg.host+"/team/app:1"))
	if _, err := Open(s.cfg); bourse.ErrorCode(err) != bourse.EUnavailable {
		t.Fatalf("a second Store on one cache: %v, want unavailable", err)
	}
	s.Close()

	// What a crash leaves: an unpack under way, and a directory named
	// like an image with no meta.
	dir := s.cfg.CacheDir
	os.MkdirAll(filepath.Join(dir, tmpDir, "half", rootfsDir, "bin"), 0o755)
	half := filepath.Join(dir, imagesDir, strings.Repeat("ab", 32))
	os.MkdirAll(filepath.Join(half, rootfsDir), 0o755)
	os.MkdirAll(filepath.Join(dir, imagesDir, "junk"), 0o755)
	reg.srv.Close()

	s2, err := Open(s.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if got := entries(t, s2, tmpDir); len(got) != 0 {
		t.Errorf("tmp/ holds %v after Open", got)
	}
	if got := entries(t, s2, imagesDir); len(got) != 1 || got[0] != strings.TrimPrefix(digest, "sha256:") {
		t.Errorf("images/ holds %v, want the one complete image", got)
	}
	img := mustPull(t, s2, reg.host+"/team/app@"+digest)
	if readFile(t, img, "f") != "kept" || img.Config.User != "1000" {
		t.Errorf("the image after a restart: f %q, config %+v", readFile(t, img, "f"), img.Config)
	}
}

func TestConcurrentPullsUnpackOnce(t *testing.T) {
	const pulls = 8
	reg := newRegistry(t)
	layer := layerOf(t, file("f", "once"))
	ld, _ := layer.Digest()
	reg.push(t, "team/app:1", imageOf(t, v1.Config{}, layer))
	// The layer waits until every Pull has asked for the manifest, so
	// that they overlap.
	var manifests atomic.Int32
	gate := make(chan struct{})
	reg.setFront(func(w http.ResponseWriter, r *http.Request) bool {
		if strings.Contains(r.URL.Path, "/manifests/") && manifests.Add(1) == pulls {
			close(gate)
		}
		if strings.HasSuffix(r.URL.Path, ld.String()) {
			<-gate
		}
		return false
	})
	reg.reset()
	s := openStore(t, reg)
	var wg sync.WaitGroup
	imgs := make([]*Image, pulls)
	errs := make([]error, pulls)
	for i := range pulls {
		wg.Go(func() { imgs[i], errs[i] = s.Pull(context.Background(), reg.host+"/team/app:1") })
	}
	wg.Wait()
	for i := range pulls {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if imgs[i].RootFS != imgs[0].RootFS {
			t.Errorf("Pull %d: %s, want %s", i, imgs[i].RootFS, imgs[0].RootFS)
		}
	}
	if n := reg.requests("GET /v2/team/app/blobs"); n != 2 {
		t.Errorf("%d blob requests, want 2: the config and the layer, once", n)
	}
	if e := s.cached[imgs[0].Digest]; e.refs != pulls {
		t.Errorf("%d in use, want %d", e.refs, pulls)
	}
}

func TestPullHandsOnACancelledUnpack(t *testing.T) {
	reg := newRegistry(t)
	layer := layerOf(t, file("f", "handed on"))
	ld, _ := layer.Digest()
	reg.push(t, "team/app:1", imageOf(t, v1.Config{}, layer))
	var first atomic.Bool
	blocked := make(chan struct{})
	reg.setFront(func(w http.ResponseWriter, r *http.Request) bool {
		if strings.HasSuffix(r.URL.Path, ld.String()) && first.CompareAndSwap(false, true) {
			close(blocked)
			<-r.Context().Done() // until the first Pull gives up
			return true
		}
		return false
	})
	s := openStore(t, reg)
	ctx, cancel := context.WithCancel(context.Background())
	firstErr := make(chan error)
	go func() {
		_, err := s.Pull(ctx, reg.host+"/team/app:1")
		firstErr <- err
	}()
	<-blocked
	second := make(chan *Image)
	go func() { second <- mustPull(t, s, reg.host+"/team/app:1") }()
	cancel()
	if err := <-firstErr; !errors.Is(err, context.Canceled) {
		t.Errorf("the cancelled Pull: %v, want context.Canceled", err)
	}
	if img := <-second; readFile(t, img, "f") != "handed on" {
		t.Errorf("the second Pull's image: %q", readFile(t, img, "f"))
	}
	if got := entries(t, s, tmpDir); len(got) != 0 {
		t.Errorf("tmp/ holds %v", got)
	}
}

func TestOpenRefusesConfig(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		cfg  Config
	}{
		{"NoCacheDir", Config{Allowed: []string{"r.example/"}}},
		{"NoAllowed", Config{CacheDir: dir}},
		{"ShortName", Config{CacheDir: dir, Allowed: []string{"busybox"}}},
		{"BadPath", Config{CacheDir: dir, Allowed: []string{"r.example/team/../x"}}},
		{"NegativeLimit", Config{CacheDir: dir, Allowed: []string{"r.example/"}, MaxUnpacked: -1}},
		{"BadInsecure", Config{CacheDir: dir, Allowed: []string{"r.example/"}, Insecure: []string{"a b"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Open(c.cfg)
			wantCode(t, err, bourse.EInvalid)
		})
	}
}
