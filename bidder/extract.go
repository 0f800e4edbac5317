package bidder

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/bourse/bourse"
)

// ExtractResults unpacks a results archive into dir, which it creates if
// missing, and returns the files it wrote. The archive comes from a
// server the client does not control: only regular files and directories
// are taken, every name must stay inside dir (os.Root holds it to that,
// links included), and a file already there is replaced.
func ExtractResults(archive io.Reader, dir string) ([]string, error) {
	const op = "bidder.ExtractResults"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	defer root.Close()
	var wrote []string
	tr := tar.NewReader(archive)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return wrote, nil
		}
		if err != nil {
			return wrote, &bourse.Error{Code: bourse.EInvalid, Op: op, Message: "the results archive is not a tar archive", Err: err}
		}
		name := path.Clean(strings.TrimSuffix(h.Name, "/"))
		if !filepath.IsLocal(filepath.FromSlash(name)) {
			return wrote, bourse.Errorf(bourse.EInvalid, op, "the archive names %q, outside the results", h.Name)
		}
		local := filepath.FromSlash(name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := root.MkdirAll(local, 0o755); err != nil {
				return wrote, fmt.Errorf("%s: %w", op, err)
			}
		case tar.TypeReg:
			if d := filepath.Dir(local); d != "." {
				if err := root.MkdirAll(d, 0o755); err != nil {
					return wrote, fmt.Errorf("%s: %w", op, err)
				}
			}
			f, err := root.OpenFile(local, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
			if err != nil {
				return wrote, fmt.Errorf("%s: %w", op, err)
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return wrote, fmt.Errorf("%s: %s: %w", op, name, err)
			}
			wrote = append(wrote, name)
		default:
			return wrote, bourse.Errorf(bourse.EInvalid, op, "the archive holds %q, which is not a regular file or a directory", h.Name)
		}
	}
}
