// Package lazyfs is a file system for tests that loses what was not
// synced, as a host's power loss does: a FUSE loopback over a real
// directory whose files' writes (and truncations) stay in memory, as
// dirty pages of a page cache, until the file is synced (fsync,
// fdatasync, a write through a handle opened O_SYNC or O_DSYNC) or the
// cache written back (Writeback, a clean Unmount). Crash unmounts it,
// dropping them, as Jepsen's LazyFS's clear-cache does; what is left in
// the directory is what the disk would hold after the power came back.
// Names are another matter: creating, renaming and removing files and
// directories reach the directory at once, as they do in LazyFS, and a
// close does not sync (nor does it in a kernel). A kill -9 of a process
// writing here loses nothing by itself, as it loses nothing on a real
// disk: the cache outlives the process.
//
// It mounts with mount(2) directly (no fusermount), so it needs root and
// /dev/fuse: Require says whether a test can run it.
package lazyfs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// FS is a mounted lazy file system.
type FS struct {
	dir, mountpoint string
	server          *fuse.Server

	// mu is held shared by every operation that reads or changes a
	// file, and alone by Crash: an operation is done before the power
	// goes, or not at all.
	mu   sync.RWMutex
	dead bool

	cmu    sync.Mutex // caches
	caches map[key]*cache
}

// key names a file on the disk: its inode.
type key struct{ dev, ino uint64 }

// Mount mounts a lazy view of directory dir at mountpoint.
func Mount(dir, mountpoint string) (*FS, error) {
	root, err := fs.NewLoopbackRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("lazyfs: %w", err)
	}
	lfs := &FS{dir: dir, mountpoint: mountpoint, caches: map[key]*cache{}}
	rn := &node{LoopbackNode: root.(*fs.LoopbackNode), fs: lfs}
	lfs.server, err = fs.Mount(mountpoint, rn, &fs.Options{MountOptions: fuse.MountOptions{
		DirectMountStrict: true, FsName: dir, Name: "lazyfs"}})
	if err != nil {
		return nil, fmt.Errorf("lazyfs: mount %s on %s: %w", dir, mountpoint, err)
	}
	return lfs, nil
}

// enter starts an operation: it fails with EIO once the power is gone.
func (f *FS) enter() (done func(), errno syscall.Errno) {
	f.mu.RLock()
	if f.dead {
		f.mu.RUnlock()
		return nil, syscall.EIO
	}
	return f.mu.RUnlock, 0
}

// cacheOf is the cache of the file st describes, made if create is set.
// An operation calls it (FS.enter).
func (f *FS) cacheOf(st *syscall.Stat_t, create bool) *cache {
	k := key{uint64(st.Dev), st.Ino}
	f.cmu.Lock()
	defer f.cmu.Unlock()
	c := f.caches[k]
	if c == nil && create {
		c = &cache{}
		f.caches[k] = c
	}
	return c
}

// forget forgets the cache of a file that is gone: its last name was
// removed. A handle still open keeps it; a new file on the same inode
// number starts clean.
func (f *FS) forget(st *syscall.Stat_t) {
	f.cmu.Lock()
	defer f.cmu.Unlock()
	delete(f.caches, key{uint64(st.Dev), st.Ino})
}

// handle is an open file of the mount: a descriptor of the disk's file,
// and its cache.
func (f *FS) handle(file *os.File, sync bool) (*handle, syscall.Errno) {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(file.Fd()), &st); err != nil {
		_ = file.Close()
		return nil, fs.ToErrno(err)
	}
	c := f.cacheOf(&st, true)
	return &handle{fs: f, f: file, lf: fs.NewLoopbackFileFromOS(file), c: c, sync: sync}, 0
}

// Unsynced is how many bytes the files hold that the disk does not.
func (f *FS) Unsynced() int64 {
	f.cmu.Lock()
	defer f.cmu.Unlock()
	var n int64
	for _, c := range f.caches {
		n += c.unsynced()
	}
	return n
}

// Writeback writes every file's cache to the disk and syncs it, as a
// kernel writes dirty pages back within half a minute of their write
// (vm.dirty_expire_centisecs): what was written before, on a host that
// has been up a while.
func (f *FS) Writeback() error {
	done, errno := f.enter()
	if errno != 0 {
		return errors.New("lazyfs: crashed")
	}
	defer done()
	f.cmu.Lock()
	defer f.cmu.Unlock()
	var errs []error
	for _, c := range f.caches {
		errs = append(errs, c.sync(nil))
	}
	return errors.Join(errs...)
}

// Crash drops every write not synced, as a power loss does, and
// unmounts. Stop (kill -9) the processes writing here first, so that
// nothing they do follows the loss. It returns how many bytes were lost.
func (f *FS) Crash() (lost int64, err error) {
	f.mu.Lock()
	f.cmu.Lock()
	for _, c := range f.caches {
		lost += c.unsynced()
		c.drop()
	}
	f.dead, f.caches = true, map[key]*cache{}
	f.cmu.Unlock()
	f.mu.Unlock()
	return lost, f.unmount()
}

// Unmount writes every cache back and unmounts, as a clean shutdown
// does; after a Crash, which unmounted it, it does nothing.
func (f *FS) Unmount() error {
	f.mu.RLock()
	dead := f.dead
	f.mu.RUnlock()
	if dead {
		return nil
	}
	return errors.Join(f.Writeback(), f.unmount())
}

func (f *FS) unmount() error {
	if err := f.server.Unmount(); err != nil {
		// Files the kernel has not released yet: detach the mount now,
		// and let the kernel finish with it.
		if err := syscall.Unmount(f.mountpoint, unix.MNT_DETACH); err != nil {
			return fmt.Errorf("lazyfs: unmount %s: %w", f.mountpoint, err)
		}
	}
	return nil
}

// Require skips the test where the lazy file system cannot run (not
// root, no /dev/fuse), saying why, except in CI (CI=true), where it
// must run and the test fails instead.
func Require(t testing.TB) {
	t.Helper()
	if err := Available(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("lazyfs: %v: in CI the lazy file system must run (as root, with /dev/fuse)", err)
		}
		t.Skipf("lazyfs: %v: the lazy file system needs root and /dev/fuse", err)
	}
}

// Available says why the lazy file system cannot mount here, if it
// cannot.
func Available() error {
	if os.Geteuid() != 0 {
		return errors.New("not root (mount(2) needs it; there is no fusermount)")
	}
	dev, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		return err
	}
	return dev.Close()
}

// handle is an open file.
type handle struct {
	fs   *FS
	f    *os.File
	lf   *fs.LoopbackFile // f, for the loopback's locks
	c    *cache
	sync bool // opened O_SYNC or O_DSYNC
}

var (
	_ fs.FileReader    = (*handle)(nil)
	_ fs.FileWriter    = (*handle)(nil)
	_ fs.FileFsyncer   = (*handle)(nil)
	_ fs.FileFlusher   = (*handle)(nil)
	_ fs.FileReleaser  = (*handle)(nil)
	_ fs.FileGetattrer = (*handle)(nil)
	_ fs.FileGetlker   = (*handle)(nil)
	_ fs.FileSetlker   = (*handle)(nil)
	_ fs.FileSetlkwer  = (*handle)(nil)
)

func (h *handle) Read(_ context.Context, buf []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	done, errno := h.fs.enter()
	if errno != 0 {
		return nil, errno
	}
	defer done()
	n, err := h.c.read(h.f, buf, off)
	if err != nil {
		return nil, fs.ToErrno(err)
	}
	return fuse.ReadResultData(buf[:n]), 0
}

func (h *handle) Write(_ context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	done, errno := h.fs.enter()
	if errno != 0 {
		return 0, errno
	}
	defer done()
	if err := h.c.write(h.f, data, off); err != nil {
		return 0, fs.ToErrno(err)
	}
	if h.sync {
		if err := h.c.sync(h.f); err != nil {
			return 0, fs.ToErrno(err)
		}
	}
	return uint32(len(data)), 0
}

func (h *handle) Fsync(context.Context, uint32) syscall.Errno {
	done, errno := h.fs.enter()
	if errno != 0 {
		return errno
	}
	defer done()
	return fs.ToErrno(h.c.sync(h.f))
}

// Flush (a close) syncs nothing.
func (h *handle) Flush(context.Context) syscall.Errno { return 0 }

func (h *handle) Release(ctx context.Context) syscall.Errno { return h.lf.Release(ctx) }

func (h *handle) Getattr(ctx context.Context, out *fuse.AttrOut) syscall.Errno {
	if errno := h.lf.Getattr(ctx, out); errno != 0 {
		return errno
	}
	out.Size = uint64(h.c.sizeOr(int64(out.Size)))
	return 0
}

func (h *handle) Getlk(ctx context.Context, owner uint64, lk *fuse.FileLock, flags uint32, out *fuse.FileLock) syscall.Errno {
	return h.lf.Getlk(ctx, owner, lk, flags, out)
}

func (h *handle) Setlk(ctx context.Context, owner uint64, lk *fuse.FileLock, flags uint32) syscall.Errno {
	return h.lf.Setlk(ctx, owner, lk, flags)
}

func (h *handle) Setlkw(ctx context.Context, owner uint64, lk *fuse.FileLock, flags uint32) syscall.Errno {
	return h.lf.Setlkw(ctx, owner, lk, flags)
}
