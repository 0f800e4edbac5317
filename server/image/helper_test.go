package image

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bourse/bourse"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// layerOf is a gzip-compressed layer of entries.
func layerOf(tb testing.TB, ents ...ent) v1.Layer {
	tb.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(tarOf(tb, ents...))
	zw.Close()
	return static.NewLayer(buf.Bytes(), types.DockerLayer)
}

// imageOf is a linux/amd64 image of layers, with cfg as its config.
func imageOf(tb testing.TB, cfg v1.Config, layers ...v1.Layer) v1.Image {
	tb.Helper()
	img, err := mutate.ConfigFile(empty.Image, &v1.ConfigFile{OS: "linux", Architecture: "amd64", Config: cfg})
	if err != nil {
		tb.Fatal(err)
	}
	if img, err = mutate.AppendLayers(img, layers...); err != nil {
		tb.Fatal(err)
	}
	return img
}

// testRegistry is go-containerregistry's registry, served over HTTP,
// which counts the requests it answers and lets a test stand in front of
// it (to lie, or to wait).
type testRegistry struct {
	host string
	srv  *httptest.Server

	mu    sync.Mutex
	count map[string]int                                // "GET /v2/repo/blobs" → requests
	front func(http.ResponseWriter, *http.Request) bool // true: answered
}

func newRegistry(tb testing.TB) *testRegistry { return startRegistry(tb, httptest.NewServer) }

// newTLSRegistry serves over HTTPS, with a certificate that only
// r.srv.Client() trusts.
func newTLSRegistry(tb testing.TB) *testRegistry { return startRegistry(tb, httptest.NewTLSServer) }

func startRegistry(tb testing.TB, serve func(http.Handler) *httptest.Server) *testRegistry {
	tb.Helper()
	r := &testRegistry{count: map[string]int{}}
	h := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	r.srv = serve(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.count[req.Method+" "+kind(req.URL.Path)]++
		front := r.front
		r.mu.Unlock()
		if front != nil && front(w, req) {
			return
		}
		h.ServeHTTP(w, req)
	}))
	tb.Cleanup(r.srv.Close)
	r.host = r.srv.Listener.Addr().String()
	return r
}

// kind is a request's path without what follows manifests/ or blobs/.
func kind(p string) string {
	for _, k := range []string{"/manifests/", "/blobs/"} {
		if i := strings.Index(p, k); i >= 0 {
			return p[:i+len(k)-1]
		}
	}
	return p
}

func (r *testRegistry) requests(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if key == "" {
		n := 0
		for _, c := range r.count {
			n += c
		}
		return n
	}
	return r.count[key]
}

func (r *testRegistry) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	clear(r.count)
}

func (r *testRegistry) setFront(f func(http.ResponseWriter, *http.Request) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.front = f
}

// push puts img in the registry as repo:tag ("team/app:1") and returns its
// digest.
func (r *testRegistry) push(tb testing.TB, repoTag string, img v1.Image) string {
	tb.Helper()
	ref, err := name.ParseReference(r.host + "/" + repoTag)
	if err != nil {
		tb.Fatal(err)
	}
	if err := remote.Write(ref, img, remote.WithTransport(r.srv.Client().Transport)); err != nil {
		tb.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		tb.Fatal(err)
	}
	return d.String()
}

// openStore opens a Store on a new cache that pulls from r, each Config
// change applied first.
func openStore(tb testing.TB, r *testRegistry, changes ...func(*Config)) *Store {
	tb.Helper()
	cfg := Config{Allowed: []string{r.host + "/"}, Insecure: []string{r.host}, CacheDir: tb.TempDir(), Now: steppingClock()}
	for _, c := range changes {
		c(&cfg)
	}
	s, err := Open(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// steppingClock moves a second at each reading, so that each use of the
// cache is later than the one before.
func steppingClock() func() time.Time {
	var mu sync.Mutex
	t := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(time.Second)
		return t
	}
}

// wantCode fails tb unless err carries code.
func wantCode(tb testing.TB, err error, code bourse.Code) {
	tb.Helper()
	tb.Log(err)
	if got := bourse.ErrorCode(err); got != code {
		tb.Fatalf("error %v: code %q, want %q", err, got, code)
	}
}

// mustPull pulls ref, failing tb on an error.
func mustPull(tb testing.TB, s *Store, ref string) *Image {
	tb.Helper()
	img, err := s.Pull(context.Background(), ref)
	if err != nil {
		tb.Fatalf("Pull(%s): %v", ref, err)
	}
	return img
}
