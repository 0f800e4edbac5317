package untar

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"time"

	"github.com/bourse/bourse"
	"golang.org/x/sys/unix"
)

// inRoot is how every path of an archive is resolved: as if the image's
// root were the filesystem's (an absolute symlink, or "..", stays in it,
// as under chroot), never through /proc's magic links, never onto another
// mount. The kernel does it (openat2, Linux 5.6), so that no symlink an
// archive made is ever followed on the host.
const inRoot = unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV

// openDir opens directory p of the root ("." for the root itself).
func (u *Root) openDir(p string) (int, error) {
	how := unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: inRoot}
	for range 16 {
		fd, err := unix.Openat2(u.root, p, &how)
		// EAGAIN: a rename raced the lookup; nothing else writes
		// here, but the kernel may say it anyway.
		if err != unix.EAGAIN && err != unix.EINTR {
			return fd, err
		}
	}
	return -1, fmt.Errorf("%s: the lookup kept being interrupted", p)
}

// mkdirAll opens directory p of the root, making it and what is missing
// above it first.
func (u *Root) mkdirAll(p string) (int, error) {
	fd, err := u.openDir(p)
	if err != unix.ENOENT || p == "." {
		return fd, err
	}
	parent, err := u.mkdirAll(path.Dir(p))
	if err != nil {
		return -1, err
	}
	defer unix.Close(parent)
	if err := u.mkdirAt(parent, path.Base(p)); err != nil && err != unix.EEXIST {
		return -1, err
	}
	fd, err = u.openDir(p)
	if err == unix.ENOENT {
		return -1, fmt.Errorf("%s: a dangling symlink is in the way", p)
	}
	return fd, err
}

// mkdirAt makes directory name in d, mode 0755 whatever the umask, and
// the Owner's.
func (u *Root) mkdirAt(d int, name string) error {
	if err := unix.Mkdirat(d, name, 0o755); err != nil {
		return err
	}
	fd, err := unix.Openat(d, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if o := u.opt.Owner; o != nil {
		if err := unix.Fchown(fd, o.UID, o.GID); err != nil {
			return err
		}
	}
	return unix.Fchmod(fd, 0o755)
}

// own gives name in d, whatever it is (a symlink itself, never what it
// names), to the Owner. Nothing else writes the folder meanwhile: a job
// user unpacked for has no process yet.
func (u *Root) own(d int, name string) error {
	o := u.opt.Owner
	if o == nil {
		return nil
	}
	return unix.Fchownat(d, name, o.UID, o.GID, unix.AT_SYMLINK_NOFOLLOW)
}

// removeAt removes name from d, a directory with all it holds, following
// no symlink; nothing there is no error. A new entry replaces what a lower
// layer left at its name this way.
func removeAt(d int, name string) error {
	var st unix.Stat_t
	if err := unix.Fstatat(d, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if err == unix.ENOENT {
			return nil
		}
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return unix.Unlinkat(d, name, 0)
	}
	sub, err := unix.Openat(d, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	err = clearDir(sub, "", nil)
	unix.Close(sub)
	if err != nil {
		return err
	}
	return unix.Unlinkat(d, name, unix.AT_REMOVEDIR)
}

// clearDir removes what directory d (at path prefix of the root) holds but
// the paths keep names, and, in a kept directory, what keep names too: an
// opaque whiteout hides the layers below, not the entries of its own.
func clearDir(d int, prefix string, keep map[string]bool) error {
	dup, err := unix.Dup(d)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(dup), prefix)
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return err
	}
	for _, n := range names {
		p := path.Join(prefix, n)
		if !keep[p] {
			if err := removeAt(d, n); err != nil {
				return err
			}
			continue
		}
		sub, err := unix.Openat(d, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
			continue // a file or a symlink of this layer's
		}
		if err != nil {
			return err
		}
		err = clearDir(sub, p, keep)
		unix.Close(sub)
		if err != nil {
			return err
		}
	}
	return nil
}

// writeAt creates file name in d, which must not exist, with size bytes of
// data.
func writeAt(d int, name string, mode uint32, data io.Reader, size int64) error {
	fd, err := unix.Openat(d, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), name)
	_, err = io.CopyN(f, data, size)
	if err == nil {
		err = unix.Fchmod(fd, mode)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// setMtime gives name in d the archive's modification time, which some
// programs compare (Python, its sources' with their bytecode's). A time
// the filesystem cannot hold is left: the file is there all the same.
func setMtime(d int, name string, t time.Time) {
	ts := unix.Timespec{Sec: t.Unix(), Nsec: int64(t.Nanosecond())}
	_ = unix.UtimesNanoAt(d, name, []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW)
}

// CheckSupport says whether the kernel resolves paths in a folder (openat2
// with RESOLVE_IN_ROOT), which unpacking needs, trying it on dir: an
// EUnavailable error if not.
func CheckSupport(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	u := &Root{root: fd}
	sub, err := u.openDir(".")
	if err != nil {
		return &bourse.Error{Code: bourse.EUnavailable, Op: "untar",
			Message: "the kernel cannot resolve paths in a folder (openat2 needs Linux 5.6 or later)", Err: err}
	}
	return unix.Close(sub)
}
