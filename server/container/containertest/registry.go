package containertest

import (
	"archive/tar"
	"bytes"
	"io"
	"io/fs"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Registry runs a container registry (go-containerregistry's, in memory)
// on a loopback port until the test ends, and returns its host:port. It
// speaks plain HTTP: a store must list it as insecure.
func Registry(t testing.TB) string {
	t.Helper()
	return SlowRegistry(t, "", 0)
}

// SlowRegistry is Registry, whose blobs (an image's config and layers) of
// the repositories whose path holds slow take d longer each: a registry
// far away, or an image of gigabytes.
func SlowRegistry(t testing.TB, slow string, d time.Duration) string {
	t.Helper()
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if slow != "" && strings.Contains(r.URL.Path, slow) && strings.Contains(r.URL.Path, "/blobs/") && r.Method == http.MethodGet {
			select {
			case <-time.After(d): //wallclock: a test registry's delay
			case <-r.Context().Done():
				return
			}
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// Push puts the folder root, as one layer, into the registry at ref
// (host:port/repo:tag) as a linux/amd64 image of cfg, and returns the
// image's digest. Files keep their modes; owners are root, as an image's.
func Push(t testing.TB, root, ref string, cfg v1.Config) string {
	t.Helper()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		data, err := tarOf(root)
		return io.NopCloser(bytes.NewReader(data)), err
	})
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.ConfigFile(empty.Image, &v1.ConfigFile{OS: "linux", Architecture: "amd64", Config: cfg})
	if err == nil {
		img, err = mutate.AppendLayers(img, layer)
	}
	if err != nil {
		t.Fatal(err)
	}
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img); err != nil {
		t.Fatalf("containertest: push %s: %v", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

// tarOf is the folder root as a tar archive, paths relative to it.
func tarOf(root string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		h, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		h.Name, h.Uid, h.Gid, h.Uname, h.Gname = filepath.ToSlash(rel), 0, 0, "", ""
		if d.IsDir() {
			h.Name += "/"
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if info.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			_, err = tw.Write(data)
			return err
		}
		return nil
	})
	if err == nil {
		err = tw.Close()
	}
	return buf.Bytes(), err
}
