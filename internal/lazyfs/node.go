package lazyfs

import (
	"context"
	"os"
	"path/filepath"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// node is a file or directory of the mount: go-fuse's loopback, which
// does what it is asked on the directory underneath at once, but for a
// file's contents and size, which go to its cache until a sync.
// Metadata (names, modes, creations, renames, removals) is on the disk
// as soon as it is done, as LazyFS keeps it.
type node struct {
	*fs.LoopbackNode
	fs *FS
}

var (
	_ fs.NodeWrapChilder = (*node)(nil)
	_ fs.NodeLookuper    = (*node)(nil)
	_ fs.NodeOpener      = (*node)(nil)
	_ fs.NodeCreater     = (*node)(nil)
	_ fs.NodeGetattrer   = (*node)(nil)
	_ fs.NodeSetattrer   = (*node)(nil)
	_ fs.NodeStatxer     = (*node)(nil)
	_ fs.NodeUnlinker    = (*node)(nil)
	_ fs.NodeRenamer     = (*node)(nil)
	_ fs.NodeTmpfiler    = (*node)(nil)
)

func (n *node) WrapChild(_ context.Context, ops fs.InodeEmbedder) fs.InodeEmbedder {
	return &node{LoopbackNode: ops.(*fs.LoopbackNode), fs: n.fs}
}

// path is the node's path on the disk.
func (n *node) path() string {
	return filepath.Join(n.RootData.Path, n.Path(n.Root()))
}

// openFlags are the flags to open the disk's file with for a handle
// opened with flags: read and write, whatever the caller asked, for a
// write of part of a page reads the rest first; and without what the
// cache does itself (appending is done at the offset the kernel gives,
// truncating and syncing by the cache).
func openFlags(flags uint32) int {
	f := int(flags) &^ (syscall.O_ACCMODE | syscall.O_APPEND | syscall.O_TRUNC | syscall.O_SYNC | syscall.O_DSYNC |
		syscall.O_CREAT | syscall.O_EXCL | fuse.FMODE_EXEC)
	return f | syscall.O_RDWR
}

// synced says whether flags ask for every write to be on the disk before
// it returns (O_SYNC, O_DSYNC).
func synced(flags uint32) bool { return flags&(syscall.O_SYNC|syscall.O_DSYNC) != 0 }

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	done, errno := n.fs.enter()
	if errno != 0 {
		return nil, 0, errno
	}
	defer done()
	if !n.IsDir() && n.StableAttr().Mode&syscall.S_IFMT != syscall.S_IFREG {
		return n.LoopbackNode.Open(ctx, flags)
	}
	f, err := os.OpenFile(n.path(), openFlags(flags), 0)
	if err != nil {
		return nil, 0, fs.ToErrno(err)
	}
	h, errno := n.fs.handle(f, synced(flags))
	if errno != 0 {
		return nil, 0, errno
	}
	if flags&syscall.O_TRUNC != 0 {
		if err := h.c.truncate(f, 0); err != nil {
			_ = f.Close()
			return nil, 0, fs.ToErrno(err)
		}
	}
	return h, 0, 0
}

func (n *node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	done, errno := n.fs.enter()
	if errno != 0 {
		return nil, nil, 0, errno
	}
	defer done()
	// The loopback makes the file (on the disk at once, as a name is)
	// and opens it as asked; the handle is the cache's, on a descriptor
	// of its own.
	ch, lf, _, errno := n.LoopbackNode.Create(ctx, name, flags&^(syscall.O_TRUNC|syscall.O_SYNC|syscall.O_DSYNC), mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	if r, ok := lf.(fs.FileReleaser); ok {
		r.Release(ctx)
	}
	f, err := os.OpenFile(filepath.Join(n.path(), name), openFlags(flags), 0)
	if err != nil {
		return nil, nil, 0, fs.ToErrno(err)
	}
	h, errno := n.fs.handle(f, synced(flags))
	if errno != 0 {
		return nil, nil, 0, errno
	}
	if flags&syscall.O_TRUNC != 0 {
		if err := h.c.truncate(f, 0); err != nil {
			_ = f.Close()
			return nil, nil, 0, fs.ToErrno(err)
		}
		out.Attr.Size = 0
	}
	return ch, h, 0, 0
}

// Tmpfile is refused: the loopback's would bypass the cache.
func (n *node) Tmpfile(context.Context, uint32, uint32, *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	return nil, nil, 0, syscall.EOPNOTSUPP
}

// cacheOf is the cache of the node's file, if it has one.
func (n *node) cacheOf() *cache {
	var st syscall.Stat_t
	if err := syscall.Lstat(n.path(), &st); err != nil {
		return nil
	}
	return n.fs.cacheOf(&st, false)
}

// Lookup finds a name, with its file's size as the cache has it: the
// kernel takes the size a lookup gives as the file's.
func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	ch, errno := n.LoopbackNode.Lookup(ctx, name, out)
	if errno != 0 {
		return nil, errno
	}
	var st syscall.Stat_t
	if syscall.Lstat(filepath.Join(n.path(), name), &st) == nil {
		if c := n.fs.cacheOf(&st, false); c != nil {
			out.Attr.Size = uint64(c.sizeOr(int64(out.Attr.Size)))
		}
	}
	return ch, 0
}

func (n *node) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	if h, ok := f.(*handle); ok {
		return h.Getattr(ctx, out)
	}
	if errno := n.LoopbackNode.Getattr(ctx, f, out); errno != 0 {
		return errno
	}
	if c := n.cacheOf(); c != nil {
		out.Size = uint64(c.sizeOr(int64(out.Size)))
	}
	return 0
}

func (n *node) Statx(ctx context.Context, f fs.FileHandle, flags, mask uint32, out *fuse.StatxOut) syscall.Errno {
	if errno := n.LoopbackNode.Statx(ctx, f, flags, mask, out); errno != 0 {
		return errno
	}
	c := n.cacheOf()
	if h, ok := f.(*handle); ok {
		c = h.c
	}
	if c != nil {
		out.Size = uint64(c.sizeOr(int64(out.Size)))
	}
	return 0
}

// Setattr truncates in the cache, and does the rest on the disk.
func (n *node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	done, errno := n.fs.enter()
	if errno != 0 {
		return errno
	}
	defer done()
	if size, ok := in.GetSize(); ok {
		h, ok := f.(*handle)
		if !ok {
			// truncate(2) by name: a descriptor of the test's own.
			file, err := os.OpenFile(n.path(), os.O_RDWR, 0)
			if err != nil {
				return fs.ToErrno(err)
			}
			defer file.Close()
			if h, errno = n.fs.handle(file, false); errno != 0 {
				return errno
			}
		}
		if err := h.c.truncate(h.f, int64(size)); err != nil {
			return fs.ToErrno(err)
		}
		in.Valid &^= fuse.FATTR_SIZE
	}
	if _, ok := f.(*handle); ok {
		f = nil // the loopback sets the rest by name
	}
	if errno := n.LoopbackNode.Setattr(ctx, f, in, out); errno != 0 {
		return errno
	}
	if c := n.cacheOf(); c != nil {
		out.Size = uint64(c.sizeOr(int64(out.Size)))
	}
	return 0
}

// Unlink removes the name; a file that had no other is gone, and so is
// its cache (its inode number may be given to the next file).
func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	done, errno := n.fs.enter()
	if errno != 0 {
		return errno
	}
	defer done()
	var st syscall.Stat_t
	gone := syscall.Lstat(filepath.Join(n.path(), name), &st) == nil && st.Nlink == 1
	if errno := n.LoopbackNode.Unlink(ctx, name); errno != 0 {
		return errno
	}
	if gone {
		n.fs.forget(&st)
	}
	return 0
}

// Rename renames; a file it replaces that had no other name is gone, as
// in Unlink.
func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	done, errno := n.fs.enter()
	if errno != 0 {
		return errno
	}
	defer done()
	var st, from syscall.Stat_t
	gone := false
	if np, ok := newParent.(*node); ok && flags&unix.RENAME_EXCHANGE == 0 {
		gone = syscall.Lstat(filepath.Join(np.path(), newName), &st) == nil && st.Nlink == 1 &&
			syscall.Lstat(filepath.Join(n.path(), name), &from) == nil && from.Ino != st.Ino
	}
	if errno := n.LoopbackNode.Rename(ctx, name, newParent, newName, flags); errno != 0 {
		return errno
	}
	if gone {
		n.fs.forget(&st)
	}
	return 0
}
