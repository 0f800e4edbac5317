package image

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/internal/untar"
)

// The cache's layout under CacheDir:
//
//	lock                   flocked by the Store that has the cache
//	images/<hex>/rootfs/   a complete image's root filesystem
//	images/<hex>/image.json its meta; its mtime is when it was last used
//	tmp/                   unpacks under way and evictions under way
//
// An image is unpacked under tmp/ and renamed into images/ only when
// complete, and renamed back to tmp/ to be removed, so that images/ holds
// only complete images whatever a crash interrupts; Open empties tmp/.
const (
	imagesDir = "images"
	tmpDir    = "tmp"
	lockName  = "lock"
	metaName  = "image.json"
	rootfsDir = "rootfs"
)

// meta is what image.json keeps of an image.
type meta struct {
	Ref    string      `json:"ref"`
	Digest string      `json:"digest"`
	Config ImageConfig `json:"config"`
	Bytes  int64       `json:"bytes"` // unpacked, as the tar headers declared them
	Files  int64       `json:"files"`
}

// entry is a complete image in the cache.
type entry struct {
	meta
	refs int       // Pulls not yet Released
	used time.Time // last Pull or Release, for least recently used
}

// openCache makes or takes CacheDir and loads the images it holds.
func (s *Store) openCache() error {
	dir := s.cfg.CacheDir
	for _, d := range []string{dir, filepath.Join(dir, imagesDir), filepath.Join(dir, tmpDir)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	lock, err := os.OpenFile(filepath.Join(dir, lockName), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		return &bourse.Error{Code: bourse.EUnavailable, Field: "cache_dir",
			Message: dir + ": another image store has it", Err: err}
	}
	s.lock = lock
	if err := untar.CheckSupport(dir); err != nil {
		lock.Close()
		return &bourse.Error{Code: bourse.ErrorCode(err), Field: "cache_dir", Message: bourse.ErrorMessage(err), Err: err}
	}
	tmps, err := os.ReadDir(filepath.Join(dir, tmpDir))
	if err != nil {
		lock.Close()
		return err
	}
	var gone []string
	for _, t := range tmps {
		gone = append(gone, filepath.Join(dir, tmpDir, t.Name()))
	}
	images, err := os.ReadDir(filepath.Join(dir, imagesDir))
	if err != nil {
		lock.Close()
		return err
	}
	for _, d := range images {
		e, err := s.load(d.Name())
		if err != nil {
			s.log.Warn("image cache: removing what is not a complete image", "dir", d.Name(), "err", err)
			gone = append(gone, filepath.Join(dir, imagesDir, d.Name()))
			continue
		}
		s.cached[e.Digest] = e
	}
	s.mu.Lock()
	gone = append(gone, s.evictLocked()...)
	s.mu.Unlock()
	s.remove(gone)
	return nil
}

// load reads a cached image's meta.
func (s *Store) load(hex string) (*entry, error) {
	digest := "sha256:" + hex
	if !sha256Digest.MatchString(digest) {
		return nil, fmt.Errorf("not named by a digest")
	}
	p := filepath.Join(s.imageDir(digest), metaName)
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	var m meta
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if m.Digest != digest {
		return nil, fmt.Errorf("%s says digest %s", metaName, m.Digest)
	}
	fi, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	return &entry{meta: m, used: fi.ModTime()}, nil
}

// touch keeps e's last use on disk, as its meta's mtime, so that the order
// of eviction outlives a restart.
func (s *Store) touch(e *entry) {
	p := filepath.Join(s.imageDir(e.Digest), metaName)
	if err := os.Chtimes(p, e.used, e.used); err != nil {
		s.log.Warn("image cache: cannot record an image's use", "digest", e.Digest, "err", err)
	}
}

// evictLocked takes images not in use out of the cache, least recently
// used first, until the cache is within MaxCacheBytes, and returns the
// directories to remove (outside s.mu: removing a large image takes time).
func (s *Store) evictLocked() []string {
	var total int64
	for _, e := range s.cached {
		total += e.Bytes
	}
	var gone []string
	for total > s.cfg.MaxCacheBytes {
		var lru *entry
		for _, e := range s.cached {
			if e.refs == 0 && (lru == nil || e.used.Before(lru.used)) {
				lru = e
			}
		}
		if lru == nil {
			s.log.Warn("image cache: over its size, but every image is in use", "bytes", total, "max", s.cfg.MaxCacheBytes)
			break
		}
		delete(s.cached, lru.Digest)
		total -= lru.Bytes
		// Named uniquely without a random name: tmp/ is emptied at Open,
		// and s.evictions counts since.
		s.evictions++
		to := filepath.Join(s.cfg.CacheDir, tmpDir, fmt.Sprintf("evicted-%d", s.evictions))
		if err := os.Rename(s.imageDir(lru.Digest), to); err != nil {
			s.log.Error("image cache: cannot evict an image", "digest", lru.Digest, "err", err)
			continue
		}
		s.log.Info("image cache: evicted", "digest", lru.Digest, "ref", lru.Ref, "bytes", lru.Bytes)
		gone = append(gone, to)
	}
	return gone
}

// remove deletes directories taken out of the cache.
func (s *Store) remove(dirs []string) {
	for _, d := range dirs {
		if err := os.RemoveAll(d); err != nil && !errors.Is(err, os.ErrNotExist) {
			s.log.Error("image cache: cannot remove", "dir", d, "err", err)
		}
	}
}
