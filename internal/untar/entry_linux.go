package untar

import (
	"archive/tar"
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"github.com/bourse/bourse"
	"golang.org/x/sys/unix"
)

// OCI whiteouts: a ".wh.name" entry removes name from the layers below; a
// ".wh..wh..opq" entry hides everything the layers below put in its
// directory.
const (
	whiteoutPrefix = ".wh."
	opaqueWhiteout = ".wh..wh..opq"
)

// Create makes dir, a new folder everyone may read, and opens it as a
// Root: an image's root file system.
func Create(dir string, opt Options) (*Root, error) {
	if err := unix.Mkdir(dir, 0o755); err != nil {
		return nil, &os.PathError{Op: "mkdir", Path: dir, Err: err}
	}
	u, err := Open(dir, opt)
	if err != nil {
		return nil, err
	}
	// The umask may have taken bits: the root is everyone's to read.
	if err := unix.Fchmod(u.root, 0o755); err != nil {
		u.Close()
		return nil, &os.PathError{Op: "chmod", Path: dir, Err: err}
	}
	return u, nil
}

// Open opens dir, a folder that exists, as a Root, its mode and owner
// as they are: a job's working folder.
func Open(dir string, opt Options) (*Root, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	u := newRoot(opt)
	u.root = fd
	return u, nil
}

// Close lets go of the folder.
func (u *Root) Close() {
	if u.root >= 0 {
		unix.Close(u.root)
		u.root = -1
	}
}

// Apply unpacks one archive (an image's layer), compressed or not, read
// from src, over what the Root holds. It reads src to its end, past the
// archive's, for go-containerregistry checks a layer's digest when its
// stream ends.
func (u *Root) Apply(src io.Reader) error {
	br := bufio.NewReader(src)
	r, done, err := decompress(br)
	if err != nil {
		return u.bad("not a tar archive, gzip or zstd: %v", err)
	}
	defer done()
	tr := tar.NewReader(r)
	created := map[string]bool{} // by this layer, which its opaque whiteouts keep
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return u.bad("not a valid tar archive: %v", err)
		}
		if err := u.entry(hdr, tr, created); err != nil {
			return err
		}
	}
	if _, err := io.Copy(io.Discard, br); err != nil {
		return fmt.Errorf("reading the archive to its end: %w", err)
	}
	return nil
}

// entry applies one entry of a layer.
func (u *Root) entry(hdr *tar.Header, data io.Reader, created map[string]bool) error {
	if u.files++; u.files > u.opt.MaxFiles {
		return u.bad("%s holds more than %d files, this server's limit", u.opt.What, u.opt.MaxFiles)
	}
	// Every entry whose data the tar reader reads counts, written or
	// skipped: a bomb declares a size, and its bytes are refused before
	// any is read.
	if !headerOnly(hdr.Typeflag) {
		if u.bytes += hdr.Size; u.bytes > u.opt.MaxBytes || u.bytes < 0 {
			return u.bad("%s unpacks to more than %d bytes, this server's limit", u.opt.What, u.opt.MaxBytes)
		}
	}
	p, err := cleanPath(hdr.Name)
	if err != nil {
		return u.bad("entry %q: %v", hdr.Name, err)
	}
	dir, base := path.Dir(p), path.Base(p)
	if u.opt.Whiteouts && strings.HasPrefix(base, whiteoutPrefix) {
		return u.whiteout(dir, base, created)
	}
	if p == "." {
		if hdr.Typeflag == tar.TypeDir {
			return nil // the root's mode is the Store's
		}
		return u.bad("entry %q: the root is not a directory", hdr.Name)
	}
	switch hdr.Typeflag {
	case tar.TypeReg, tar.TypeGNUSparse, tar.TypeDir, tar.TypeSymlink, tar.TypeLink:
	case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
		// Never created: a device node would open the host's device.
		if !u.opt.SkipDevices {
			return u.bad("entry %q: a device node or fifo", hdr.Name)
		}
		u.opt.Log.Info("untar: device node or fifo left out", "op", u.opt.Op, "path", p)
		return nil
	default:
		u.opt.Log.Info("untar: entry of an unknown type left out", "op", u.opt.Op, "path", p, "type", string(hdr.Typeflag))
		return nil
	}
	pd, err := u.mkdirAll(dir)
	if err != nil {
		return u.fsErr(hdr.Name, err)
	}
	defer unix.Close(pd)
	switch hdr.Typeflag {
	case tar.TypeDir:
		err = u.dir(pd, base)
	case tar.TypeSymlink:
		if err = removeAt(pd, base); err == nil {
			err = unix.Symlinkat(hdr.Linkname, pd, base)
		}
	case tar.TypeLink:
		err = u.link(pd, base, hdr.Linkname)
	default:
		if err = removeAt(pd, base); err == nil {
			err = writeAt(pd, base, fileMode(hdr.Mode), data, hdr.Size)
		}
	}
	if err != nil {
		return u.fsErr(hdr.Name, err)
	}
	if err := u.own(pd, base); err != nil {
		return u.fsErr(hdr.Name, err)
	}
	if hdr.Typeflag != tar.TypeDir {
		setMtime(pd, base, hdr.ModTime)
	}
	// The directories above an entry are the layer's too, whether it
	// has entries for them or not: an opaque whiteout keeps them.
	for q := p; q != "." && !created[q]; q = path.Dir(q) {
		created[q] = true
	}
	return nil
}

// headerOnly are the types whose data the tar reader never reads,
// whatever size they declare.
func headerOnly(t byte) bool {
	switch t {
	case tar.TypeLink, tar.TypeSymlink, tar.TypeChar, tar.TypeBlock, tar.TypeDir, tar.TypeFifo:
		return true
	}
	return false
}

// cleanPath is an entry's name as a path relative to the root, "." for the
// root itself. A leading "/" is dropped, as tar and Docker drop it; a name
// that climbs out of the root with ".." is refused: no layer has one for a
// good reason.
func cleanPath(name string) (string, error) {
	if name == "" || strings.IndexByte(name, 0) >= 0 {
		return "", errors.New("not a path")
	}
	p := path.Clean(strings.TrimLeft(name, "/"))
	if p == ".." || strings.HasPrefix(p, "../") {
		return "", errors.New("the path climbs out of the root")
	}
	return p, nil
}

// fileMode is what a file unpacked gets: readable by all, executable
// by all if by anyone, writable by its owner (Options.Owner, or the
// user that unpacks, for ownership is not kept), never setuid, setgid or sticky.
func fileMode(m int64) uint32 {
	if m&0o111 != 0 {
		return 0o755
	}
	return 0o644
}

// whiteout applies a whiteout entry in directory dir.
func (u *Root) whiteout(dir, base string, created map[string]bool) error {
	pd, err := u.openDir(dir)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return nil // nothing below to hide
	}
	if err != nil {
		return u.fsErr(path.Join(dir, base), err)
	}
	defer unix.Close(pd)
	if base == opaqueWhiteout {
		err = clearDir(pd, dir, created)
	} else if name := strings.TrimPrefix(base, whiteoutPrefix); name == "" || name == "." || name == ".." {
		return u.bad("entry %q: a whiteout of nothing", path.Join(dir, base))
	} else {
		err = removeAt(pd, name)
	}
	return u.fsErr(path.Join(dir, base), err)
}

// dir makes directory base in pd, keeping one that is there.
func (u *Root) dir(pd int, base string) error {
	var st unix.Stat_t
	err := unix.Fstatat(pd, base, &st, unix.AT_SYMLINK_NOFOLLOW)
	if err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return nil
	}
	if err := removeAt(pd, base); err != nil {
		return err
	}
	return u.mkdirAt(pd, base)
}

// link makes base in pd a hard link to target, a file already in the root:
// target's directory is resolved in the root as every path is, so that
// the link can reach nothing outside it.
func (u *Root) link(pd int, base, target string) error {
	t, err := cleanPath(target)
	if err != nil || t == "." {
		return u.bad("hard link to %q: not a file in the image", target)
	}
	td, err := u.openDir(path.Dir(t))
	if err != nil {
		return u.bad("hard link to %q: not a file in the image (%v)", target, err)
	}
	defer unix.Close(td)
	var tst, st unix.Stat_t
	if err := unix.Fstatat(td, path.Base(t), &tst, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return u.bad("hard link to %q: not a file in the image (%v)", target, err)
	}
	if f := tst.Mode & unix.S_IFMT; f != unix.S_IFREG && f != unix.S_IFLNK {
		return u.bad("hard link to %q: not a file", target)
	}
	if unix.Fstatat(pd, base, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Dev == tst.Dev && st.Ino == tst.Ino {
		return nil // a link to itself, or linked already
	}
	if err := removeAt(pd, base); err != nil {
		return err
	}
	return unix.Linkat(td, path.Base(t), pd, base, 0)
}

// fsErr says what a filesystem call's failure was: the host's trouble
// (space, quota, I/O) as it is, anything else the archive's fault (a file
// where its path wants a directory, a symlink loop, a name too long).
func (u *Root) fsErr(name string, err error) error {
	var be *bourse.Error
	switch {
	case err == nil, errors.As(err, &be):
		return err
	case errors.Is(err, unix.ENOSPC), errors.Is(err, unix.EDQUOT), errors.Is(err, unix.EIO),
		errors.Is(err, unix.EROFS), errors.Is(err, unix.ENOMEM), errors.Is(err, unix.EMFILE),
		errors.Is(err, unix.ENFILE), errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return fmt.Errorf("unpacking %q: %w", name, err)
	}
	return &bourse.Error{Code: bourse.EInvalidOffer, Op: u.opt.Op, Field: u.opt.Field,
		Message: fmt.Sprintf("entry %q cannot be unpacked", name), Err: err}
}
