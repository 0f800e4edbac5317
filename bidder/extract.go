package bidder

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/bourse/bourse"
)

// Extract bounds what ExtractResults writes.
type Extract struct {
	// MaxBytes bounds the bytes of the files written, in all. An
	// archive's files hold no more than the archive, but a tar entry may
	// say that it is sparse and unpack to much more: pass the archive's
	// size. Required.
	MaxBytes int64
	// MaxFiles bounds the files and directories written; DefaultMaxFiles
	// if zero.
	MaxFiles int
	// Force replaces files already in the folder. Without it an archive
	// that names one is refused whole (a ReplaceError).
	Force bool
}

// DefaultMaxFiles is Extract.MaxFiles's default.
const DefaultMaxFiles = 10_000

// ReplaceError is ExtractResults' refusal of an archive that names files
// already in the folder, without Extract.Force: nothing was written. Its
// code is invalid.
type ReplaceError struct {
	Dir   string
	Files []string
}

func (e *ReplaceError) Error() string {
	return fmt.Sprintf("the results would replace %d files already in %s (%s): nothing was written", len(e.Files), e.Dir, strings.Join(e.Files, ", "))
}

func (e *ReplaceError) Unwrap() error {
	return &bourse.Error{Code: bourse.EInvalid, Op: "bidder.ExtractResults", Message: "files would be replaced"}
}

// ExtractResults unpacks a results archive into dir, which it creates if
// missing, and returns the files it wrote. The archive comes from a
// server the client does not control. It is read twice: first checked
// whole, and nothing is written if any of it breaks a rule; then
// unpacked. Only regular files and directories are taken, every name must
// stay inside dir (os.Root holds it to that, links included), the files
// are bounded in number and bytes (o), and a file already there is
// replaced only with o.Force, and then removed first, so that what is
// written is the server's plain data (mode 0644), never a file that keeps
// the old one's executable bits.
func ExtractResults(archive io.ReadSeeker, dir string, o Extract) ([]string, error) {
	const op = "bidder.ExtractResults"
	if o.MaxFiles <= 0 {
		o.MaxFiles = DefaultMaxFiles
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	defer root.Close()
	if err := check(archive, root, dir, o); err != nil {
		return nil, err
	}
	if _, err := archive.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	var wrote []string
	err = entries(archive, func(h *tar.Header, name string, r io.Reader) error {
		local := filepath.FromSlash(name)
		if h.Typeflag == tar.TypeDir {
			return root.MkdirAll(local, 0o755)
		}
		if d := filepath.Dir(local); d != "." {
			if err := root.MkdirAll(d, 0o755); err != nil {
				return err
			}
		}
		if o.Force {
			if err := root.Remove(local); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		f, err := root.OpenFile(local, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return err
		}
		_, err = io.CopyN(f, r, h.Size)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		wrote = append(wrote, name)
		return nil
	})
	if err != nil {
		return wrote, fmt.Errorf("%s: %w", op, err)
	}
	return wrote, nil
}

// check reads the archive through and refuses it, before anything is
// written, if it names what may not be written, more than o allows, or,
// without o.Force, files already in the folder.
func check(archive io.Reader, root *os.Root, dir string, o Extract) error {
	const op = "bidder.ExtractResults"
	var (
		files   int
		bytes   int64
		seen    = map[string]bool{}
		replace []string
	)
	err := entries(archive, func(h *tar.Header, name string, _ io.Reader) error {
		if seen[name] {
			return bourse.Errorf(bourse.EInvalid, op, "the archive names %q twice", name)
		}
		seen[name] = true
		if files++; files > o.MaxFiles {
			return bourse.Errorf(bourse.EInvalid, op, "the archive holds more than %d files and directories, the most taken", o.MaxFiles)
		}
		fi, err := root.Lstat(filepath.FromSlash(name))
		exists := err == nil
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s: %w", name, err)
		}
		if h.Typeflag == tar.TypeDir {
			if exists && !fi.IsDir() {
				return bourse.Errorf(bourse.EInvalid, op, "the archive has a directory %q where %s has a file", name, dir)
			}
			return nil
		}
		if h.Size < 0 || h.Size > o.MaxBytes-bytes {
			return bourse.Errorf(bourse.EInvalid, op, "the archive's files hold more than %d bytes, the most taken (%s says it holds %d)", o.MaxBytes, name, h.Size)
		}
		bytes += h.Size
		switch {
		case exists && fi.IsDir():
			return bourse.Errorf(bourse.EInvalid, op, "the archive has a file %q where %s has a directory", name, dir)
		case exists:
			replace = append(replace, name)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(replace) > 0 && !o.Force {
		return &ReplaceError{Dir: dir, Files: replace}
	}
	return nil
}

// entries calls f with each entry of a tar archive, its name cleaned, and
// its body; it refuses names that leave the folder and kinds other than
// regular files and directories.
func entries(archive io.Reader, f func(h *tar.Header, name string, body io.Reader) error) error {
	const op = "bidder.ExtractResults"
	tr := tar.NewReader(archive)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return &bourse.Error{Code: bourse.EInvalid, Op: op, Message: "the results archive is not a tar archive", Err: err}
		}
		name := path.Clean(strings.TrimSuffix(h.Name, "/"))
		if !filepath.IsLocal(filepath.FromSlash(name)) {
			return bourse.Errorf(bourse.EInvalid, op, "the archive names %q, outside the results", h.Name)
		}
		if h.Typeflag != tar.TypeDir && h.Typeflag != tar.TypeReg {
			return bourse.Errorf(bourse.EInvalid, op, "the archive holds %q, which is not a regular file or a directory", h.Name)
		}
		if err := f(h, name, tr); err != nil {
			return err
		}
	}
}
