package image

import (
	"context"
	"encoding/base64"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bourse/bourse"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// readFile is a file of an image's root, "" if missing.
func readFile(tb testing.TB, img *Image, p string) string {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(img.RootFS, p))
	if err != nil && !os.IsNotExist(err) {
		tb.Fatal(err)
	}
	return string(b)
}

func TestPullByTagAndDigest(t *testing.T) {
	reg := newRegistry(t)
	cfg := v1.Config{Entrypoint: []string{"/bin/app"}, Cmd: []string{"--serve"}, Env: []string{"A=1"}, WorkingDir: "/work", User: "root"}
	digest := reg.push(t, "team/app:1", imageOf(t, cfg,
		layerOf(t, dir("bin/"), file("bin/app", "v1"), file("etc/motd", "hello")),
		layerOf(t, file("bin/app", "v2"))))
	s := openStore(t, reg)
	ctx := context.Background()

	got, err := s.Resolve(ctx, reg.host+"/team/app:1")
	if err != nil || got != digest {
		t.Fatalf("Resolve = %q, %v; want %q", got, err, digest)
	}
	img := mustPull(t, s, reg.host+"/team/app:1")
	if img.Digest != digest || img.Ref != reg.host+"/team/app:1" {
		t.Errorf("Pull = %s %s, want %s", img.Ref, img.Digest, digest)
	}
	if a, m := readFile(t, img, "bin/app"), readFile(t, img, "etc/motd"); a != "v2" || m != "hello" {
		t.Errorf("bin/app %q, etc/motd %q: want the upper layer's v2 and the lower's hello", a, m)
	}
	want := ImageConfig{Entrypoint: cfg.Entrypoint, Cmd: cfg.Cmd, Env: cfg.Env, WorkingDir: "/work", User: "root"}
	if !slices.Equal(img.Config.Entrypoint, want.Entrypoint) || !slices.Equal(img.Config.Cmd, want.Cmd) ||
		!slices.Equal(img.Config.Env, want.Env) || img.Config.WorkingDir != want.WorkingDir || img.Config.User != "root" {
		t.Errorf("Config = %+v, want %+v", img.Config, want)
	}

	byDigest := mustPull(t, s, reg.host+"/team/app@"+digest)
	if byDigest.RootFS != img.RootFS {
		t.Errorf("by digest: RootFS %s, want the tag's %s", byDigest.RootFS, img.RootFS)
	}
}

func TestPullCacheHit(t *testing.T) {
	reg := newRegistry(t)
	digest := reg.push(t, "team/app:1", imageOf(t, v1.Config{}, layerOf(t, file("a", "a"))))
	s := openStore(t, reg)
	s.Release(mustPull(t, s, reg.host+"/team/app:1"))

	reg.reset()
	img := mustPull(t, s, reg.host+"/team/app@"+digest)
	if n := reg.requests(""); n != 0 {
		t.Errorf("a cached digest made %d requests, want none", n)
	}
	if got, err := s.Resolve(context.Background(), reg.host+"/team/app@"+digest); err != nil || got != digest {
		t.Errorf("Resolve of a cached digest = %q, %v", got, err)
	}
	s.Release(img)
	mustPull(t, s, reg.host+"/team/app:1")
	if n := reg.requests("GET /v2/team/app/blobs"); n != 0 {
		t.Errorf("a cached image's tag fetched %d blobs, want none", n)
	}
	if reg.requests("GET /v2/team/app/manifests") == 0 {
		t.Errorf("a tag was not resolved at the registry")
	}
}

func TestPullIndexTakesLinuxAmd64(t *testing.T) {
	reg := newRegistry(t)
	amd := imageOf(t, v1.Config{}, layerOf(t, file("arch", "amd64")))
	arm := imageOf(t, v1.Config{}, layerOf(t, file("arch", "arm64")))
	idx := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: arm, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64"}}},
		mutate.IndexAddendum{Add: amd, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}})
	ref, _ := name.ParseReference(reg.host + "/team/multi:1")
	if err := remote.WriteIndex(ref, idx); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, reg)
	img := mustPull(t, s, reg.host+"/team/multi:1")
	if a := readFile(t, img, "arch"); a != "amd64" {
		t.Errorf("arch %q, want amd64", a)
	}
	if d, _ := amd.Digest(); img.Digest != d.String() {
		t.Errorf("Digest %s, want the amd64 image's %s", img.Digest, d)
	}
	idxDigest, _ := idx.Digest()
	if d, err := s.Resolve(context.Background(), reg.host+"/team/multi@"+idxDigest.String()); err != nil || d != img.Digest {
		t.Errorf("Resolve(index digest) = %s, %v; want the amd64 image's %s", d, err, img.Digest)
	}

	armOnly := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: arm, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64"}}})
	ref, _ = name.ParseReference(reg.host + "/team/armonly:1")
	if err := remote.WriteIndex(ref, armOnly); err != nil {
		t.Fatal(err)
	}
	_, err := s.Pull(context.Background(), reg.host+"/team/armonly:1")
	wantCode(t, err, bourse.EInvalidOffer)

	armImg, _ := mutate.ConfigFile(empty.Image, &v1.ConfigFile{OS: "linux", Architecture: "arm64"})
	reg.push(t, "team/armimage:1", armImg)
	_, err = s.Pull(context.Background(), reg.host+"/team/armimage:1")
	wantCode(t, err, bourse.EInvalidOffer)
	if !strings.Contains(err.Error(), "linux/arm64") {
		t.Errorf("error %v does not name the image's platform", err)
	}
}

func TestPullRegistryUnreachable(t *testing.T) {
	reg := newRegistry(t)
	s := openStore(t, reg)
	reg.srv.Close()
	_, err := s.Pull(context.Background(), reg.host+"/team/app:1")
	wantCode(t, err, bourse.EUnavailable)
}

func TestPullRegistryRefusesAccess(t *testing.T) {
	reg := newRegistry(t)
	reg.setFront(func(w http.ResponseWriter, r *http.Request) bool {
		if strings.Contains(r.URL.Path, "/manifests/") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			w.Write([]byte(`{"errors":[{"code":"DENIED","message":"no"}]}`))
			return true
		}
		return false
	})
	s := openStore(t, reg)
	_, err := s.Pull(context.Background(), reg.host+"/team/app:1")
	wantCode(t, err, bourse.EPermission)
	_, err = s.Pull(context.Background(), reg.host+"/team/missing:1")
	wantCode(t, err, bourse.EPermission)
}

func TestPullNoSuchImage(t *testing.T) {
	reg := newRegistry(t)
	s := openStore(t, reg)
	_, err := s.Pull(context.Background(), reg.host+"/team/missing:1")
	wantCode(t, err, bourse.EInvalidOffer)
}

func TestPullOverHTTPSUnlessInsecure(t *testing.T) {
	plain := newRegistry(t)
	plain.push(t, "team/app:1", imageOf(t, v1.Config{}, layerOf(t, file("f", "x"))))
	plain.reset()
	// go-containerregistry would speak plain HTTP to a loopback address.
	s := openStore(t, plain, func(c *Config) { c.Insecure = nil })
	_, err := s.Pull(context.Background(), plain.host+"/team/app:1")
	wantCode(t, err, bourse.EUnavailable)
	if n := plain.requests(""); n != 0 {
		t.Errorf("%d plain HTTP requests to a registry not listed Insecure", n)
	}

	tls := newTLSRegistry(t)
	tls.push(t, "team/app:1", imageOf(t, v1.Config{}, layerOf(t, file("f", "over TLS"))))
	s = openStore(t, tls, func(c *Config) { c.Insecure, c.Transport = nil, tls.srv.Client().Transport })
	if img := mustPull(t, s, tls.host+"/team/app:1"); readFile(t, img, "f") != "over TLS" {
		t.Errorf("f: %q", readFile(t, img, "f"))
	}
}

func TestPullWithCredentials(t *testing.T) {
	reg := newRegistry(t)
	reg.push(t, "team/private:1", imageOf(t, v1.Config{}, layerOf(t, file("f", "private"))))
	reg.setFront(func(w http.ResponseWriter, r *http.Request) bool {
		if u, p, ok := r.BasicAuth(); ok && u == "bourse" && p == "s3cret" {
			return false
		}
		w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
		w.WriteHeader(http.StatusUnauthorized)
		return true
	})
	creds := filepath.Join(t.TempDir(), "config.json")
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // nothing from the host's own
	t.Setenv("HOME", t.TempDir())

	s := openStore(t, reg)
	_, err := s.Pull(context.Background(), reg.host+"/team/private:1")
	wantCode(t, err, bourse.EPermission)

	auth := base64.StdEncoding.EncodeToString([]byte("bourse:s3cret"))
	os.WriteFile(creds, []byte(`{"auths":{"`+reg.host+`":{"auth":"`+auth+`"}}}`), 0o600)
	s = openStore(t, reg, func(c *Config) { c.Credentials = creds })
	if img := mustPull(t, s, reg.host+"/team/private:1"); readFile(t, img, "f") != "private" {
		t.Errorf("f: %q", readFile(t, img, "f"))
	}
}
