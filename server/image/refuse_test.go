package image

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/bourse/bourse"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// noLeftovers fails tb if a refused pull left an image or a part of one.
func noLeftovers(tb testing.TB, s *Store) {
	tb.Helper()
	if got := entries(tb, s, imagesDir); len(got) != 0 {
		tb.Errorf("images/ holds %v after a refusal", got)
	}
	if got := entries(tb, s, tmpDir); len(got) != 0 {
		tb.Errorf("tmp/ holds %v after a refusal", got)
	}
	if len(s.cached) != 0 || len(s.pulls) != 0 {
		tb.Errorf("the store holds %d images and %d pulls after a refusal", len(s.cached), len(s.pulls))
	}
}

// noise is n bytes that do not compress.
func noise(n int) string {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return string(b)
}

// TestPullRefuses: what the registry, the reference or the image's
// manifest does wrong is refused with the code the runner tells the
// client, and leaves nothing in the cache.
func TestPullRefuses(t *testing.T) {
	ctx := context.Background()
	small := imageOf(t, v1.Config{}, layerOf(t, file("f", "x")))

	t.Run("RegistryNotAllowed", func(t *testing.T) {
		reg := newRegistry(t)
		reg.push(t, "team/app:1", small)
		reg.reset()
		s := openStore(t, reg, func(c *Config) { c.Allowed = []string{"registry.example.com/team/"} })
		_, err := s.Pull(ctx, reg.host+"/team/app:1")
		wantCode(t, err, bourse.EPermission)
		_, err = s.Resolve(ctx, reg.host+"/team/app:1")
		wantCode(t, err, bourse.EPermission)
		if n := reg.requests(""); n != 0 {
			t.Errorf("%d requests to a registry not allowed", n)
		}
		noLeftovers(t, s)
	})
	t.Run("PrefixConfusion", func(t *testing.T) {
		reg := newRegistry(t)
		reg.push(t, "teamevil/app:1", small)
		reg.push(t, "team/app:1", small)
		reg.reset()
		s := openStore(t, reg, func(c *Config) { c.Allowed = []string{reg.host + "/team"} })
		_, err := s.Pull(ctx, reg.host+"/teamevil/app:1")
		wantCode(t, err, bourse.EPermission)
		_, err = s.Pull(ctx, reg.host+"/team/../teamevil/app:1")
		wantCode(t, err, bourse.EInvalidOffer)
		if n := reg.requests(""); n != 0 {
			t.Errorf("%d requests for repositories not allowed", n)
		}
		mustPull(t, s, reg.host+"/team/app:1")
	})
	t.Run("TooLargeCompressed", func(t *testing.T) {
		reg := newRegistry(t)
		reg.push(t, "team/big:1", imageOf(t, v1.Config{}, layerOf(t, file("f", noise(5000)))))
		reg.reset()
		s := openStore(t, reg, func(c *Config) { c.MaxCompressed = 4000 })
		_, err := s.Pull(ctx, reg.host+"/team/big:1")
		wantCode(t, err, bourse.EInvalidOffer)
		if n := reg.requests("GET /v2/team/big/blobs"); n != 0 {
			t.Errorf("%d blobs fetched of an image whose manifest is over the limit", n)
		}
		noLeftovers(t, s)
	})
	t.Run("TooLargeCountedAsRead", func(t *testing.T) {
		// The layers' declared sizes are within the limit; the
		// manifest and config read besides are not.
		reg := newRegistry(t)
		layer := layerOf(t, file("f", noise(5000)))
		size, _ := layer.Size()
		reg.push(t, "team/big:1", imageOf(t, v1.Config{}, layer))
		s := openStore(t, reg, func(c *Config) { c.MaxCompressed = size + 10 })
		_, err := s.Pull(ctx, reg.host+"/team/big:1")
		wantCode(t, err, bourse.EInvalidOffer)
		if !strings.Contains(err.Error(), fmt.Sprintf("limit of %d bytes (compressed)", size+10)) {
			t.Errorf("error %v does not say which limit", err)
		}
		noLeftovers(t, s)
	})
	t.Run("ManifestDigestMismatch", func(t *testing.T) {
		reg := newRegistry(t)
		asked := reg.push(t, "team/app:1", small)
		other := imageOf(t, v1.Config{}, layerOf(t, file("f", "other")))
		reg.push(t, "team/app:2", other)
		raw, _ := other.RawManifest()
		reg.setFront(func(w http.ResponseWriter, r *http.Request) bool {
			if !strings.HasSuffix(r.URL.Path, "/manifests/"+asked) {
				return false
			}
			w.Header().Set("Content-Type", string(types.DockerManifestSchema2))
			w.Write(raw)
			return true
		})
		s := openStore(t, reg)
		_, err := s.Pull(ctx, reg.host+"/team/app@"+asked)
		wantCode(t, err, bourse.EInvalidOffer)
		noLeftovers(t, s)
	})
	t.Run("LayerDigestMismatch", func(t *testing.T) {
		reg := newRegistry(t)
		layer := layerOf(t, file("f", "the layer"))
		ld, _ := layer.Digest()
		reg.push(t, "team/app:1", imageOf(t, v1.Config{}, layer))
		rc, _ := layer.Compressed()
		var tampered bytes.Buffer
		tampered.ReadFrom(rc)
		b := tampered.Bytes()
		b[len(b)-1] ^= 0xff // the gzip trailer's last byte: the tar reads whole
		reg.setFront(func(w http.ResponseWriter, r *http.Request) bool {
			if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, ld.String()) {
				return false
			}
			w.Write(b)
			return true
		})
		s := openStore(t, reg)
		_, err := s.Pull(ctx, reg.host+"/team/app:1")
		wantCode(t, err, bourse.EInvalidOffer)
		if !strings.Contains(err.Error(), "sha256") {
			t.Errorf("error %v: want the digest check's", err)
		}
		noLeftovers(t, s)
	})
	t.Run("ForeignLayer", func(t *testing.T) {
		var elsewhere atomic.Int32
		other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { elsewhere.Add(1) }))
		defer other.Close()
		reg := newRegistry(t)
		img, err := mutate.Append(imageOf(t, v1.Config{}), mutate.Addendum{
			Layer: layerOf(t, file("f", "x")), URLs: []string{other.URL + "/layer"}})
		if err != nil {
			t.Fatal(err)
		}
		reg.push(t, "team/foreign:1", img)
		reg.reset()
		s := openStore(t, reg)
		_, err = s.Pull(ctx, reg.host+"/team/foreign:1")
		wantCode(t, err, bourse.EInvalidOffer)
		if n := reg.requests("GET /v2/team/foreign/blobs"); elsewhere.Load() != 0 || n != 0 {
			t.Errorf("%d requests to the layer's URL, %d blobs: want none before the refusal", elsewhere.Load(), n)
		}
		noLeftovers(t, s)
	})
	t.Run("NotAnImage", func(t *testing.T) {
		reg := newRegistry(t)
		reg.push(t, "team/artifact:1", mutate.ConfigMediaType(small, "application/vnd.example.model+json"))
		s := openStore(t, reg)
		_, err := s.Pull(ctx, reg.host+"/team/artifact:1")
		wantCode(t, err, bourse.EInvalidOffer)
		noLeftovers(t, s)
	})
	t.Run("NotACompressedTar", func(t *testing.T) {
		reg := newRegistry(t)
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		zw.Write([]byte(noise(2000)))
		zw.Close()
		reg.push(t, "team/junk:1", imageOf(t, v1.Config{}, static.NewLayer(z.Bytes(), types.DockerLayer)))
		s := openStore(t, reg)
		_, err := s.Pull(ctx, reg.host+"/team/junk:1")
		wantCode(t, err, bourse.EInvalidOffer)
		noLeftovers(t, s)
	})
}
