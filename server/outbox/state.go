package outbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bourse/bourse"
)

// The outbox's directory is the server's state that must outlive a
// restart; beside the readings, the agent keeps small files there (its
// confirmed bookings), under the same lock, each replaced whole.

// SaveFile replaces the state file name with data, durably: written to a
// new file, synced, renamed over the old one, and the directory synced.
func (o *Outbox) SaveFile(name string, data []byte) error {
	if err := checkStateName(name); err != nil {
		return err
	}
	o.mu.Lock()
	closed := o.closed
	o.mu.Unlock()
	if closed {
		return bourse.Errorf(bourse.EUnavailable, "outbox.SaveFile", "the outbox is closed")
	}
	if err := replaceFile(filepath.Join(o.cfg.Dir, name), data); err != nil {
		return fmt.Errorf("outbox: save %s: %w", name, err)
	}
	if err := syncDir(o.cfg.Dir); err != nil {
		return fmt.Errorf("outbox: save %s: %w", name, err)
	}
	return nil
}

// LoadFile reads the state file name; nil and no error if there is none.
func (o *Outbox) LoadFile(name string) ([]byte, error) {
	if err := checkStateName(name); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(o.cfg.Dir, name))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("outbox: load %s: %w", name, err)
	}
	return data, nil
}

// checkStateName keeps state files off the outbox's own.
func checkStateName(name string) error {
	if name == "" || name == logName || name == lockName || strings.HasPrefix(name, logName) || strings.ContainsAny(name, `/\`) {
		return bourse.Errorf(bourse.EInvalid, "outbox", "%q cannot name a state file", name)
	}
	return nil
}
