package image

import (
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/bourse/bourse"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
)

// Defaults for the zero values of Config.
const (
	DefaultMaxCompressed = 8 << 30
	DefaultMaxUnpacked   = 20 << 30
	DefaultMaxFiles      = 1_000_000
	DefaultMaxCacheBytes = 64 << 30
)

// Config configures a Store. CacheDir and Allowed are required; the zero
// value of every other field works.
type Config struct {
	// Allowed are the registries and repository prefixes images may come
	// from: "registry.example.com/team/" (that repository and those below
	// it), "127.0.0.1:5000/" (a whole registry), "docker.io/library/".
	// A reference none of them covers is refused with EPermission before
	// any I/O.
	Allowed []string
	// CacheDir holds the unpacked images, by digest. Made if missing,
	// mode 0700: it holds clients' images. One Store at a time.
	CacheDir string
	// MaxCacheBytes bounds what the cache keeps: past it, images not in
	// use go, least recently used first. Images in use stay, so the cache
	// may pass it while they are.
	MaxCacheBytes int64
	// MaxCompressed bounds the bytes read from registries for one image
	// (manifests, config and layers), counted as they are read.
	MaxCompressed int64
	// MaxUnpacked and MaxFiles bound one image's layers as unpacked: the
	// bytes the tar headers of all its layers declare, and their entries.
	MaxUnpacked int64
	MaxFiles    int64
	// Credentials is a docker-style config.json (auths, credsStore,
	// credHelpers), read at each pull, so that a rotated token is used.
	// Registries it does not name, or all when it is empty, get what the
	// environment gives: $DOCKER_CONFIG/config.json or
	// ~/.docker/config.json, else $REGISTRY_AUTH_FILE or Podman's
	// auth.json, else no credentials. Never from an offer.
	Credentials string
	// Insecure are registries ("127.0.0.1:5000") reached over plain HTTP.
	// Every other registry is reached over HTTPS, whatever its address.
	Insecure []string
	// Transport carries requests to registries; http.DefaultTransport if
	// nil.
	Transport http.RoundTripper
	Logger    *slog.Logger
	// Now is the clock that orders the cache's least recently used.
	Now func() time.Time
}

// Store pulls images from the allowed registries into its cache and hands
// them out for containers to run.
type Store struct {
	cfg      Config
	allowed  []string        // normalised, see allowEntry
	insecure map[string]bool // lower-case registry hosts
	keychain authn.Keychain
	log      *slog.Logger
	now      func() time.Time
	lock     *os.File // CacheDir/lock, flocked: one Store per cache

	mu     sync.Mutex
	cached map[string]*entry // by digest: complete images
	pulls  map[string]*pull  // by digest: being unpacked
	// evictions counts the images taken out of the cache, to name them
	// in tmp/ while they are removed.
	evictions int
}

// Image is a pulled image, in use until Release.
type Image struct {
	Ref    string // the reference as pulled, fully qualified
	Digest string // sha256:…, of the linux/amd64 image manifest
	// RootFS is the image's root filesystem, a directory for the
	// container runner to mount read-only. It stays until Release.
	RootFS string
	Config ImageConfig

	lease *lease
}

// ImageConfig is what the image says about how to run it.
type ImageConfig struct {
	Entrypoint []string `json:"entrypoint,omitempty"`
	Cmd        []string `json:"cmd,omitempty"`
	Env        []string `json:"env,omitempty"`
	WorkingDir string   `json:"working_dir,omitempty"`
	// User is the image's USER, as written ("", "0", "root", "1000:1000",
	// "app"): the runner decides what runs, never root on the host.
	User string `json:"user,omitempty"`
}

// lease is one Pull's hold on an image, ended once by Release.
type lease struct{ released bool }

// Open validates cfg, takes CacheDir and loads what the cache holds:
// complete images stay, anything a crash left half done goes.
func Open(cfg Config) (*Store, error) {
	const op = "image.Open"
	invalid := func(field, format string, args ...any) error {
		return &bourse.Error{Code: bourse.EInvalid, Op: op, Field: field, Message: fmt.Sprintf(format, args...)}
	}
	if cfg.CacheDir == "" {
		return nil, invalid("cache_dir", "required")
	}
	if len(cfg.Allowed) == 0 {
		return nil, invalid("allowed", "no registry allowed")
	}
	for _, f := range []struct {
		field string
		v     *int64
		def   int64
	}{
		{"max_cache_bytes", &cfg.MaxCacheBytes, DefaultMaxCacheBytes},
		{"max_compressed", &cfg.MaxCompressed, DefaultMaxCompressed},
		{"max_unpacked", &cfg.MaxUnpacked, DefaultMaxUnpacked},
		{"max_files", &cfg.MaxFiles, DefaultMaxFiles},
	} {
		if *f.v < 0 {
			return nil, invalid(f.field, "%d: want zero (the default) or more", *f.v)
		}
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	s := &Store{cfg: cfg, insecure: map[string]bool{}, log: cfg.Logger, now: cfg.Now,
		cached: map[string]*entry{}, pulls: map[string]*pull{}}
	for _, a := range cfg.Allowed {
		e, err := allowEntry(a)
		if err != nil {
			return nil, invalid("allowed", "%v", err)
		}
		s.allowed = append(s.allowed, e)
	}
	for _, h := range cfg.Insecure {
		reg, err := name.NewRegistry(strings.TrimSuffix(h, "/"))
		if err != nil {
			return nil, invalid("insecure", "%q: %v", h, err)
		}
		s.insecure[strings.ToLower(reg.Name())] = true
	}
	s.keychain = keychain(cfg.Credentials)
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now //wallclock: the default clock, for a nil Config.Now
	}
	if err := s.openCache(); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return s, nil
}

// Close lets another Store open the cache. Images handed out stay on disk.
func (s *Store) Close() error {
	return s.lock.Close()
}

// Release ends img's use: the cache may evict it from now on. The runner
// calls it once the container that mounted it is gone; a second call does
// nothing.
func (s *Store) Release(img *Image) {
	if img == nil || img.lease == nil {
		return
	}
	s.mu.Lock()
	if img.lease.released {
		s.mu.Unlock()
		return
	}
	img.lease.released = true
	if e := s.cached[img.Digest]; e != nil {
		e.refs--
		e.used = s.now()
		s.touch(e)
	}
	gone := s.evictLocked()
	s.mu.Unlock()
	s.remove(gone)
}

// imageDir is where an image's directory lives in the cache.
func (s *Store) imageDir(digest string) string {
	return filepath.Join(s.cfg.CacheDir, imagesDir, strings.TrimPrefix(digest, "sha256:"))
}
