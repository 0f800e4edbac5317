// Package atomicfile replaces a file whole: the new content is written
// beside it and renamed over it, so that a crash or a reader at the wrong
// moment sees the old file or the new one, never half of either. The
// console's users file and the NATS credentials folder's registry are
// rewritten this way.
package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Write makes path hold data, with mode, in one step.
func Write(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // after a failure; gone once renamed
	_, err = tmp.Write(data)
	if err = errors.Join(err, tmp.Chmod(mode), tmp.Sync(), tmp.Close()); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
