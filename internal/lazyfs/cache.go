package lazyfs

import (
	"errors"
	"io"
	"math"
	"os"
	"slices"
	"sync"

	"golang.org/x/sys/unix"
)

// pageSize is the cache's unit, as a kernel's page: a write of a few
// bytes makes its whole page dirty, read from the disk first.
const pageSize = 4096

// cache is what one file (an inode: every name and handle of it) has
// that the disk has not: its dirty pages, its size, and how far a
// truncation reached, until a sync writes them out or a crash drops
// them. Any of the file's descriptors reads and writes the disk's copy:
// they are one inode.
type cache struct {
	mu    sync.Mutex
	dirty bool             // the disk's copy is not the file's
	disk  *os.File         // the file on the disk, while dirty: the cache outlives its handles, as a kernel's does
	pages map[int64][]byte // dirty pages by index, pageSize each
	size  int64            // the file's size, while dirty
	// zeroFrom is where a truncation cut the file, while dirty: the
	// disk's bytes from there on are gone, and read as zeros wherever
	// a write extended the file again.
	zeroFrom int64
}

// begin makes the cache the file's record, from the disk's, before its
// first change since a sync: it keeps a descriptor of its own, so that
// a writeback after the file's handles closed can write it.
func (c *cache) begin(f *os.File) error {
	if c.dirty {
		return nil
	}
	st, err := f.Stat()
	if err != nil {
		return err
	}
	fd, err := unix.Dup(int(f.Fd()))
	if err != nil {
		return err
	}
	c.dirty, c.disk, c.pages, c.size, c.zeroFrom = true, os.NewFile(uintptr(fd), f.Name()), map[int64][]byte{}, st.Size(), math.MaxInt64
	return nil
}

// load reads page i as the file has it, from the disk: zeros past its
// end or past a truncation.
func (c *cache) load(i int64) ([]byte, error) {
	pg := make([]byte, pageSize)
	off := i * pageSize
	if off >= c.zeroFrom {
		return pg, nil
	}
	if _, err := c.disk.ReadAt(pg, off); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if cut := c.zeroFrom - off; cut < pageSize {
		clear(pg[cut:])
	}
	return pg, nil
}

// page is dirty page i, loaded from the disk if it is not yet.
func (c *cache) page(i int64) ([]byte, error) {
	if pg, ok := c.pages[i]; ok {
		return pg, nil
	}
	pg, err := c.load(i)
	if err != nil {
		return nil, err
	}
	c.pages[i] = pg
	return pg, nil
}

// write puts data at off, in the cache only.
func (c *cache) write(f *os.File, data []byte, off int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.begin(f); err != nil {
		return err
	}
	for done := 0; done < len(data); {
		at := off + int64(done)
		pg, err := c.page(at / pageSize)
		if err != nil {
			return err
		}
		done += copy(pg[at%pageSize:], data[done:])
	}
	c.size = max(c.size, off+int64(len(data)))
	return nil
}

// read reads into buf from off what the file holds, the cache's pages
// over the disk's, and returns how many bytes it read: fewer at the
// file's end.
func (c *cache) read(f *os.File, buf []byte, off int64) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.dirty {
		n, err := f.ReadAt(buf, off)
		if errors.Is(err, io.EOF) {
			err = nil
		}
		return n, err
	}
	if off >= c.size {
		return 0, nil
	}
	buf = buf[:min(int64(len(buf)), c.size-off)]
	for done := 0; done < len(buf); {
		at := off + int64(done)
		pg, ok := c.pages[at/pageSize]
		if !ok {
			var err error
			if pg, err = c.load(at / pageSize); err != nil {
				return done, err
			}
		}
		done += copy(buf[done:], pg[at%pageSize:])
	}
	return len(buf), nil
}

// truncate sets the file's size to size, in the cache only.
func (c *cache) truncate(f *os.File, size int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.begin(f); err != nil {
		return err
	}
	if size%pageSize != 0 {
		// The page the cut falls in keeps its head and loses its tail.
		pg, err := c.page(size / pageSize)
		if err != nil {
			return err
		}
		clear(pg[size%pageSize:])
	}
	for i := range c.pages {
		if i*pageSize >= size {
			delete(c.pages, i)
		}
	}
	c.size, c.zeroFrom = size, min(c.zeroFrom, size)
	return nil
}

// sizeOr is the file's size: the cache's while dirty, else disk's.
func (c *cache) sizeOr(disk int64) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dirty {
		return c.size
	}
	return disk
}

// unsynced is how many bytes the cache holds that the disk does not.
func (c *cache) unsynced() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return int64(len(c.pages)) * pageSize
}

// sync writes what the cache holds to the disk, makes the disk keep it
// (fsync through f, a handle's descriptor, or the cache's own if f is
// nil), and forgets it.
func (c *cache) sync(f *os.File) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dirty {
		f = c.disk
		if c.zeroFrom != math.MaxInt64 {
			if err := f.Truncate(c.zeroFrom); err != nil {
				return err
			}
		}
		idx := make([]int64, 0, len(c.pages))
		for i := range c.pages {
			idx = append(idx, i)
		}
		slices.Sort(idx)
		for _, i := range idx {
			n := min(pageSize, c.size-i*pageSize)
			if _, err := f.WriteAt(c.pages[i][:n], i*pageSize); err != nil {
				return err
			}
		}
		if err := f.Truncate(c.size); err != nil {
			return err
		}
	}
	if f == nil {
		return nil // clean, and no handle asked
	}
	if err := f.Sync(); err != nil {
		return err
	}
	c.forget()
	return nil
}

// forget makes the cache clean, closing its descriptor.
func (c *cache) forget() {
	if c.disk != nil {
		_ = c.disk.Close()
	}
	c.dirty, c.disk, c.pages = false, nil, nil
}

// drop forgets what the disk does not have, as a power loss does.
func (c *cache) drop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forget()
}
