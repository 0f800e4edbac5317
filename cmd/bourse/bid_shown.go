package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/internal/atomicfile"
)

// shownList is the counter-offers a command last showed a client (as a
// table or as JSON), in the order shown, for a later --take N or --take
// ID: the counter-offer taken is the one read, with its terms as shown,
// which is what taking it sends (docs/protocol.md, "Taking a
// counter-offer"). It is kept in the user's cache folder, one file per
// market and client, readable by the user alone.
type shownList struct {
	At time.Time `json:"at"`
	// Resumes is the contract the offer that got them resumed, if any:
	// taking one continues that job.
	Resumes  string             `json:"resumes,omitempty"`
	Counters []contract.Counter `json:"counters"`
	// Taken are the counter-offers of the list taken from here, by id,
	// with the contract each made: taking one again would make a second
	// contract with an escrow of its own.
	Taken map[string]taking `json:"taken,omitempty"`
}

// taking is a counter-offer taken: the contract it made, and when.
type taking struct {
	Contract string    `json:"contract"`
	At       time.Time `json:"at"`
}

// shownPath is where the list shown to this client on this market is
// kept: $XDG_CACHE_HOME/bourse/shown/<hash of the NATS URL and id>.json.
func (f *bidFlags) shownPath() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no folder to keep the counter-offers shown in: %w", err)
	}
	sum := sha256.Sum256([]byte(f.natsURL + "\x00" + f.id))
	return filepath.Join(dir, "bourse", "shown", hex.EncodeToString(sum[:8])+".json"), nil
}

// remember keeps ks as the list shown last. A list that cannot be kept
// only costs a later --take: it is said, not failed.
func (f *bidFlags) remember(ks []contract.Counter, resumes string) {
	if len(ks) == 0 {
		return
	}
	f.keep(shownList{At: time.Now().UTC(), Resumes: resumes, Counters: ks})
}

// took notes that counter-offer id, of the list shown last, made
// contract k, so that a second --take of it is refused.
func (f *bidFlags) took(id, k string) {
	list, err := f.shown()
	if err != nil || !slices.ContainsFunc(list.Counters, func(c contract.Counter) bool { return c.ID == id }) {
		return // another list was shown meanwhile
	}
	if list.Taken == nil {
		list.Taken = map[string]taking{}
	}
	list.Taken[id] = taking{Contract: k, At: time.Now().UTC()}
	f.keep(list)
}

func (f *bidFlags) keep(list shownList) {
	path, err := f.shownPath()
	if err == nil {
		err = os.MkdirAll(filepath.Dir(path), 0o700)
	}
	if err == nil {
		b, _ := json.Marshal(list)
		err = atomicfile.Write(path, b, 0o600)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bourse: the counter-offers shown are not kept for --take: %v\n", err)
	}
}

// shown is the list shown last; an empty one if none was.
func (f *bidFlags) shown() (shownList, error) {
	var list shownList
	path, err := f.shownPath()
	if err != nil {
		return list, err
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return list, nil
	}
	if err != nil {
		return list, err
	}
	if err := json.Unmarshal(b, &list); err != nil {
		return shownList{}, nil // unreadable: as if none was shown
	}
	return list, nil
}
