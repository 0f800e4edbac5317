// Package outbox keeps a server's usage readings on disk until they need
// no sending: JetStream has acknowledged them, or, for a final reading,
// the exchange's receipt says its store has it. A reading so outlives an
// outage of NATS, a loss of the usage stream and a restart of the agent.
//
// The outbox is a log file of records, one a line: an 8-digit hexadecimal
// CRC-32C of the JSON that follows, a space, and the JSON of either a
// reading to send or a note that a contract's readings up to a sequence
// number need no sending (they were acknowledged, or dropped). A crash can
// tear only the last line, whose checksum then fails: it is ignored. Open
// replays the log and rewrites it with what is still to send.
//
// Readings are cumulative, so a contract's newer reading supersedes its
// older ones: the outbox keeps only the latest reading of each contract.
// It is bounded in records and bytes; beyond either it drops the oldest
// readings that are not final, and never a final one, which settles its
// contract.
package outbox

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
)

// Defaults for the zero values of Config.
const (
	DefaultMaxRecords = 10000
	DefaultMaxBytes   = 16 << 20
)

// File names in the outbox's directory.
const (
	logName  = "readings.log"
	lockName = "lock"
)

// Config configures an Outbox. Dir is required.
type Config struct {
	// Dir holds the log; it is created if missing. One Outbox at a time
	// may use it: Open locks it.
	Dir string
	// MaxRecords and MaxBytes bound the readings kept (their encoded
	// size); zero means DefaultMaxRecords and DefaultMaxBytes. Final
	// readings are kept beyond them.
	MaxRecords int
	MaxBytes   int64
	Logger     *slog.Logger // nil: slog.Default()
}

// Outbox is a bounded, durable queue of readings. Its methods are safe for
// concurrent use.
type Outbox struct {
	cfg  Config
	log  *slog.Logger
	lock *os.File

	mu      sync.Mutex
	closed  bool
	f       *os.File // the log, opened for appending; nil when lost
	size    int64    // bytes in the log
	pending []entry  // the latest reading of each contract, oldest first
	bytes   int64    // the encoded size of pending
}

type entry struct {
	rd   contract.Reading
	size int64
}

// record is one line of the log: a reading, or Done.
type record struct {
	Reading *contract.Reading `json:"reading,omitempty"`
	Done    *done             `json:"done,omitempty"`
}

// done says that the contract's readings up to Seq need no sending.
type done struct {
	Contract string `json:"contract"`
	Seq      uint64 `json:"seq"`
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Open locks dir, replays its log and compacts it. Pending then returns
// the readings a previous Outbox on dir left unacknowledged.
func Open(cfg Config) (*Outbox, error) {
	const op = "outbox.Open"
	if cfg.Dir == "" {
		return nil, bourse.Errorf(bourse.EInvalid, op, "no directory")
	}
	if cfg.MaxRecords <= 0 {
		cfg.MaxRecords = DefaultMaxRecords
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if err := os.MkdirAll(cfg.Dir, 0o750); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	lock, err := os.OpenFile(filepath.Join(cfg.Dir, lockName), os.O_CREATE|os.O_RDWR, 0o640)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = lock.Close()
		return nil, bourse.Errorf(bourse.EUnavailable, op, "%s is in use by another outbox: %v", cfg.Dir, err)
	}
	o := &Outbox{cfg: cfg, log: cfg.Logger.With("outbox", cfg.Dir), lock: lock}
	if err := o.replay(); err != nil {
		_ = lock.Close()
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.compact(); err != nil {
		_ = lock.Close()
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return o, nil
}

// replay applies the log's records in order. Lines that fail their
// checksum are skipped: the last one is a torn write, any other is
// corruption, logged.
func (o *Outbox) replay() error {
	f, err := os.Open(filepath.Join(o.cfg.Dir, logName))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	var bad []int
	for n := 1; ; n++ {
		line, err := r.ReadBytes('\n')
		if len(line) == 0 && errors.Is(err, io.EOF) {
			break
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		rec, ok := decode(line)
		switch {
		case !ok:
			bad = append(bad, n)
		case rec.Reading != nil:
			o.add(*rec.Reading, int64(len(line)))
		case rec.Done != nil:
			o.done(rec.Done.Contract, rec.Done.Seq)
		}
		if err != nil { // io.EOF after an unterminated last line
			break
		}
	}
	switch {
	case len(bad) > 1:
		o.log.Error("corrupt records skipped", "lines", bad)
	case len(bad) == 1:
		o.log.Warn("torn or corrupt record skipped", "line", bad[0])
	}
	return nil
}

// decode parses one line; ok is false for a torn or corrupt one.
func decode(line []byte) (rec record, ok bool) {
	if len(line) < 10 || line[len(line)-1] != '\n' || line[8] != ' ' {
		return rec, false
	}
	sum, err := strconv.ParseUint(string(line[:8]), 16, 32)
	body := line[9 : len(line)-1]
	if err != nil || crc32.Checksum(body, castagnoli) != uint32(sum) {
		return rec, false
	}
	return rec, json.Unmarshal(body, &rec) == nil
}

func encode(rec record) ([]byte, error) {
	body, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	line := make([]byte, 0, len(body)+10)
	line = fmt.Appendf(line, "%08x ", crc32.Checksum(body, castagnoli))
	line = append(line, body...)
	return append(line, '\n'), nil
}

// Append writes rd to the log before it is published, with an fsync when
// it is final, and keeps it in place of the contract's older reading. An
// error means rd is not durable; it is still kept in memory.
func (o *Outbox) Append(rd contract.Reading) error {
	line, err := encode(record{Reading: &rd})
	if err != nil {
		return fmt.Errorf("outbox: encode reading %s#%d: %w", rd.Contract, rd.Seq, err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.add(rd, int64(len(line)))
	if o.closed {
		return bourse.Errorf(bourse.EUnavailable, "outbox.Append", "the outbox is closed")
	}
	if err := o.write(line); err != nil {
		return fmt.Errorf("outbox: append reading %s#%d: %w", rd.Contract, rd.Seq, err)
	}
	if rd.Final {
		if err := o.f.Sync(); err != nil {
			return fmt.Errorf("outbox: sync final reading %s#%d: %w", rd.Contract, rd.Seq, err)
		}
	}
	return o.maybeCompact()
}

// Done records that the contract's readings up to seq need no sending: call
// it once JetStream has acknowledged the reading seq (the exchange's
// receipt, for a final reading). It does not sync: a
// note lost in a crash only sends a reading again, which JetStream or the
// exchange drops as a duplicate.
func (o *Outbox) Done(id string, seq uint64) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.done(id, seq) {
		return nil // nothing pending: the note would change nothing
	}
	if o.closed {
		return nil
	}
	line, err := encode(record{Done: &done{Contract: id, Seq: seq}})
	if err == nil {
		err = o.write(line)
	}
	if err != nil {
		return fmt.Errorf("outbox: note %s:%d sent: %w", id, seq, err)
	}
	return o.maybeCompact()
}

// maybeCompact rewrites the log once it is mostly notes and superseded
// readings, which keeps it within about twice the bound.
func (o *Outbox) maybeCompact() error {
	if o.size <= 2*o.bytes+compactSlack {
		return nil
	}
	if err := o.compact(); err != nil {
		return fmt.Errorf("outbox: compact: %w", err)
	}
	return nil
}

// compactSlack is how far the log may outgrow twice its pending readings.
const compactSlack = 64 << 10

// Pending returns the readings not yet acknowledged, oldest first: the
// latest of each contract.
func (o *Outbox) Pending() []contract.Reading {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]contract.Reading, len(o.pending))
	for i, e := range o.pending {
		out[i] = e.rd
	}
	return out
}

// Len is the number of readings pending.
func (o *Outbox) Len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.pending)
}

// Close syncs and closes the log and unlocks the directory. What is
// pending stays in the log for the next Open.
func (o *Outbox) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return nil
	}
	o.closed = true
	var err error
	if o.f != nil {
		err = o.f.Sync()
		if cerr := o.f.Close(); err == nil {
			err = cerr
		}
		o.f = nil
	}
	if cerr := o.lock.Close(); err == nil { // closing releases the lock
		err = cerr
	}
	return err
}

// add keeps rd as its contract's latest reading, unless a newer one is
// kept, and drops the oldest non-final readings beyond the bounds.
func (o *Outbox) add(rd contract.Reading, size int64) {
	for i, e := range o.pending {
		if e.rd.Contract != rd.Contract {
			continue
		}
		if e.rd.Seq >= rd.Seq || e.rd.Final {
			return // stale, or a copy
		}
		o.remove(i)
		break
	}
	o.pending = append(o.pending, entry{rd: rd, size: size})
	o.bytes += size
	for i := 0; i < len(o.pending) && (len(o.pending) > o.cfg.MaxRecords || o.bytes > o.cfg.MaxBytes); {
		e := o.pending[i]
		if e.rd.Final {
			i++
			continue
		}
		o.remove(i)
		o.log.Warn("outbox full: reading dropped; a later one of the contract may replace it",
			"contract", e.rd.Contract, "seq", e.rd.Seq, "u", e.rd.U, "t", e.rd.T)
	}
	if len(o.pending) > o.cfg.MaxRecords || o.bytes > o.cfg.MaxBytes {
		o.log.Error("outbox over its bounds with final readings, which are never dropped",
			"readings", len(o.pending), "bytes", o.bytes)
	}
}

// done forgets the contract's pending reading if its seq is at most seq,
// and reports whether it did.
func (o *Outbox) done(id string, seq uint64) bool {
	for i, e := range o.pending {
		if e.rd.Contract == id {
			if e.rd.Seq > seq {
				return false
			}
			o.remove(i)
			return true
		}
	}
	return false
}

func (o *Outbox) remove(i int) {
	o.bytes -= o.pending[i].size
	o.pending = append(o.pending[:i], o.pending[i+1:]...)
}

func (o *Outbox) write(line []byte) error {
	if o.f == nil {
		// A compaction failed after it replaced the log: try again. The
		// new log may hold line's record already; a copy is harmless.
		if err := o.compact(); err != nil {
			return err
		}
	}
	n, err := o.f.Write(line)
	o.size += int64(n)
	return err
}

// compact writes the pending readings to a new log and renames it over the
// old one, syncing both the file and the directory.
func (o *Outbox) compact() error {
	var buf bytes.Buffer
	for i, e := range o.pending {
		line, err := encode(record{Reading: &e.rd})
		if err != nil {
			return err
		}
		o.pending[i].size = int64(len(line))
		buf.Write(line)
	}
	path := filepath.Join(o.cfg.Dir, logName)
	if err := replaceFile(path, buf.Bytes()); err != nil {
		return err
	}
	// The old log is gone from here on: keep writing to it and what is
	// written is lost.
	if o.f != nil {
		_ = o.f.Close()
		o.f = nil
	}
	o.size, o.bytes = int64(buf.Len()), int64(buf.Len())
	if err := syncDir(o.cfg.Dir); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return err
	}
	o.f = f
	return nil
}

// replaceFile writes data to a new file beside path, syncs it and renames
// it over path: a crash leaves the old file or the new one, whole. The
// directory is not synced: callers do, when they need the rename to last.
func replaceFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
