// Package spool keeps each job's output on the server's disk and ships it
// to the exchange's output stream, so that the output reaches the job's
// client across outages of NATS and restarts of the agent.
//
// The process runner writes a directory per contract under Config.Dir:
// stdout and stderr (each capped), results/ (the job's $BOURSE_RESULTS),
// and, once the job's process has exited and its output is drained, exit.
// The spool reads them and sends them as chunks, oldest bytes first: each
// stream from the offset its last run had sent (kept in shipped.json),
// then, once exit is there, the end of the log; then it packs results/
// into results.tar (bounded by Config.ResultsCap) and sends that, and its
// end. What is sent is de-duplicated by the stream (the chunk's id hashes
// its bytes), and a reader places each chunk at its offset, so that a
// chunk sent again after a crash is harmless. Once everything is sent the
// directory stays Config.Keep, then goes.
package spool

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// Names in a contract's directory. The runner writes the first four.
const (
	StdoutFile  = "stdout"
	StderrFile  = "stderr"
	ResultsDir  = "results"
	ExitFile    = "exit"        // the job's exit code, or "lost"
	archiveFile = "results.tar" // results/ packed, what is sent
	stateFile   = "shipped.json"
	lockFile    = "lock" // in Config.Dir: one spool at a time
)

// Defaults for the zero values of Config.
const (
	DefaultResultsCap = 64 << 20
	DefaultKeep       = 24 * time.Hour
	DefaultEvery      = 250 * time.Millisecond
)

// chunksPerPass bounds what one contract sends in one pass (4 MiB), so
// that a long backlog does not hold up the live output of the others.
const chunksPerPass = 64

// Chunk is a piece of a contract's output to send: bytes of a stream at an
// offset, or a part's end.
type Chunk struct {
	Contract string
	Part     string // protocol.PartLog or protocol.PartResults
	Stream   string // protocol.StreamStdout, …Stderr, …Results, or protocol.StreamEnd
	Offset   int64
	Data     []byte
	End      *protocol.OutputEnd // with StreamEnd
}

// Config configures a Spool. Dir and Send are required.
type Config struct {
	Dir string
	// Send stores a chunk in the output stream, returning nil once the
	// stream has it.
	Send func(ctx context.Context, c Chunk) error
	// LogCap is the runner's cap on stdout and on stderr, which a log's
	// end reports.
	LogCap int64
	// ResultsCap bounds the results archive of a contract; files past it
	// are left out, and named in its end. DefaultResultsCap if zero.
	ResultsCap int64
	// Keep is how long a contract's directory stays once all of it is
	// sent. DefaultKeep if zero.
	Keep   time.Duration
	Every  time.Duration    // how often it looks for output; DefaultEvery
	Logger *slog.Logger     // nil: slog.Default()
	Now    func() time.Time // nil: time.Now
}

// Spool ships the output under Config.Dir. Open it before the runner
// starts any job, run it with Run, and Close it.
type Spool struct {
	cfg  Config
	log  *slog.Logger
	lock *os.File

	mu     sync.Mutex
	states map[string]*state // by contract, as read or last written
	failed bool              // the last send failed: said once until one works
}

// Open locks dir and ends the output of the jobs an earlier run left:
// their processes died with it, so a directory without exit gets one
// that says "lost", and its output is sent as it stands.
func Open(cfg Config) (*Spool, error) {
	const op = "spool.Open"
	if cfg.Dir == "" || cfg.Send == nil {
		return nil, bourse.Errorf(bourse.EInvalid, op, "a directory and a sender are required")
	}
	if cfg.ResultsCap <= 0 {
		cfg.ResultsCap = DefaultResultsCap
	}
	if cfg.Keep <= 0 {
		cfg.Keep = DefaultKeep
	}
	if cfg.Every <= 0 {
		cfg.Every = DefaultEvery
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if err := os.MkdirAll(cfg.Dir, 0o750); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	lock, err := os.OpenFile(filepath.Join(cfg.Dir, lockFile), os.O_CREATE|os.O_RDWR, 0o640)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = lock.Close()
		return nil, bourse.Errorf(bourse.EUnavailable, op, "%s is in use by another server's spool: %v", cfg.Dir, err)
	}
	s := &Spool{cfg: cfg, log: cfg.Logger.With("spool", cfg.Dir), lock: lock, states: map[string]*state{}}
	ids, err := s.contracts()
	if err != nil {
		_ = lock.Close()
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	for _, id := range ids {
		st := s.state(id)
		if st.Done.IsZero() && !s.exited(id) {
			if err := os.WriteFile(filepath.Join(cfg.Dir, id, ExitFile), []byte("lost\n"), 0o640); err != nil {
				_ = lock.Close()
				return nil, fmt.Errorf("%s: %w", op, err)
			}
			s.log.Info("output of a job of the last run, which ended with it: sending what it left", "contract", id)
		}
	}
	return s, nil
}

// Caps are what the spool sends of a job's output at most, as a server
// declares them at the job's start: the runner's cap on each of stdout and
// stderr (Config.LogCap, zero if not given) and the results cap.
func (s *Spool) Caps() contract.OutputCaps {
	return contract.OutputCaps{Log: s.cfg.LogCap, Results: s.cfg.ResultsCap}
}

// Close unlocks the directory. What is not sent yet stays for the next
// Open.
func (s *Spool) Close() error { return s.lock.Close() }

// Run ships output every Config.Every until ctx ends.
func (s *Spool) Run(ctx context.Context) {
	t := time.NewTicker(s.cfg.Every) //wallclock: pacing: wakes the shipping loop
	defer t.Stop()
	for {
		s.Pass(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Pass sends what each contract's directory holds that was not sent yet,
// and removes the directories kept past Config.Keep. It stops at the
// first send that fails: the next pass tries again.
func (s *Spool) Pass(ctx context.Context) {
	ids, err := s.contracts()
	if err != nil {
		s.log.Error("read the output directory", "err", err)
		return
	}
	now := s.cfg.Now()
	for _, id := range ids {
		st := s.state(id)
		if !st.Done.IsZero() {
			if now.Sub(st.Done) > s.cfg.Keep {
				s.forget(id)
			}
			continue
		}
		err := s.ship(ctx, id, st)
		if werr := s.save(id, st); werr != nil {
			s.log.Error("record what was sent; it may be sent again", "contract", id, "err", werr)
		}
		if err != nil {
			s.sendFailed(id, err)
			return
		}
	}
	s.mu.Lock()
	if s.failed {
		s.failed = false
		s.log.Info("output is being sent again")
	}
	s.mu.Unlock()
}

func (s *Spool) sendFailed(id string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.failed {
		s.failed = true
		s.log.Warn("output not sent; it waits on disk and is tried again", "contract", id, "err", err)
	}
}

// contracts lists the contracts' directories, in order.
func (s *Spool) contracts() ([]string, error) {
	entries, err := os.ReadDir(s.cfg.Dir)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range entries {
		if e.IsDir() && protocol.CheckID(e.Name()) == nil {
			ids = append(ids, e.Name())
		}
	}
	slices.Sort(ids)
	return ids, nil
}

func (s *Spool) exited(id string) bool {
	_, err := os.Stat(filepath.Join(s.cfg.Dir, id, ExitFile))
	return err == nil
}

// forget removes a contract's directory whose output was sent long ago.
func (s *Spool) forget(id string) {
	if err := os.RemoveAll(filepath.Join(s.cfg.Dir, id)); err != nil {
		s.log.Error("remove sent output", "contract", id, "err", err)
		return
	}
	s.mu.Lock()
	delete(s.states, id)
	s.mu.Unlock()
	s.log.Debug("sent output removed", "contract", id)
}
