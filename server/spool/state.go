package spool

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"time"
)

// state is what has been sent of a contract's output, kept in its
// directory (shipped.json). It may lag what was sent (a crash between a
// send and its record): then bytes go again, which a reader places at
// their offsets.
type state struct {
	Stdout     int64     `json:"stdout"`  // bytes of stdout the stream has
	Stderr     int64     `json:"stderr"`  // bytes of stderr
	LogEnd     bool      `json:"log_end"` // the log's end was sent
	Packed     bool      `json:"packed"`  // results.tar is made
	Omitted    []string  `json:"omitted,omitempty"`
	Results    int64     `json:"results"`     // bytes of results.tar sent
	ResultsEnd bool      `json:"results_end"` // the results' end was sent
	Done       time.Time `json:"done,omitzero"`

	saved []byte // the file's bytes as last written, to skip writing them again
}

// state returns the contract's state, read from its directory the first
// time.
func (s *Spool) state(id string) *state {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.states[id]; ok {
		return st
	}
	st := &state{}
	data, err := os.ReadFile(filepath.Join(s.cfg.Dir, id, stateFile))
	switch {
	case err == nil:
		if err := json.Unmarshal(data, st); err != nil {
			s.log.Warn("unreadable record of what was sent: sending it all again", "contract", id, "err", err)
			*st = state{}
		} else {
			st.saved = data
		}
	case !errors.Is(err, os.ErrNotExist):
		s.log.Warn("record of what was sent", "contract", id, "err", err)
	}
	s.states[id] = st
	return st
}

// save writes the state when it changed, replacing the file whole. It is
// not synced: a record lost in a crash only sends bytes again.
func (s *Spool) save(id string, st *state) error {
	data, err := json.Marshal(st)
	if err != nil || string(data) == string(st.saved) {
		return err
	}
	path := filepath.Join(s.cfg.Dir, id, stateFile)
	tmp := path + ".new"
	if err := os.WriteFile(tmp, data, 0o640); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	st.saved = data
	return nil
}
