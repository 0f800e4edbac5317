package outbox_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/server/outbox"
)

// logBuffer collects an outbox's log lines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func open(t testing.TB, cfg outbox.Config) *outbox.Outbox {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	o, err := outbox.Open(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = o.Close() })
	return o
}

func reading(id string, seq uint64, final bool) contract.Reading {
	rd := contract.Reading{Contract: id, Seq: seq, U: decimal.New(int64(seq), -1), T: contract.Duration(time.Duration(seq) * time.Second),
		S: decimal.NewFromInt(1), EnergyJ: decimal.Zero, At: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), Final: final}
	if final {
		rd.Reason = contract.ReasonCompleted
		code := 0
		rd.ExitCode = &code
	}
	return rd
}

// ids names readings "<contract>:<seq>".
func ids(rds []contract.Reading) []string {
	out := []string{}
	for _, rd := range rds {
		out = append(out, rd.Contract+":"+strconv.FormatUint(rd.Seq, 10))
	}
	return out
}

func TestOutbox(t *testing.T) {
	dir := t.TempDir()
	o := open(t, outbox.Config{Dir: dir})
	assert.Empty(t, o.Pending())

	require.NoError(t, o.Append(reading("c1", 1, false)))
	require.NoError(t, o.Append(reading("c2", 1, false)))
	require.NoError(t, o.Append(reading("c1", 2, false)))
	assert.Equal(t, []string{"c2:1", "c1:2"}, ids(o.Pending()), "c1:2 supersedes c1:1")
	require.NoError(t, o.Append(reading("c1", 1, false)))
	assert.Equal(t, []string{"c2:1", "c1:2"}, ids(o.Pending()), "a stale reading is no news")

	t.Run("Done", func(t *testing.T) {
		require.NoError(t, o.Done("c1", 1))
		assert.Equal(t, []string{"c2:1", "c1:2"}, ids(o.Pending()), "an older acknowledgement leaves c1:2")
		require.NoError(t, o.Done("c2", 1))
		require.NoError(t, o.Done("c9", 1))
		assert.Equal(t, []string{"c1:2"}, ids(o.Pending()))
	})

	require.NoError(t, o.Append(reading("c3", 4, true)))
	require.NoError(t, o.Append(reading("c3", 5, false)))
	assert.Equal(t, []string{"c1:2", "c3:4"}, ids(o.Pending()), "nothing follows a final reading")

	t.Run("replay", func(t *testing.T) {
		require.NoError(t, o.Close())
		require.NoError(t, o.Close(), "closing twice")
		assert.Equal(t, bourse.EUnavailable, bourse.ErrorCode(o.Append(reading("c4", 1, true))))

		o2 := open(t, outbox.Config{Dir: dir})
		got := o2.Pending()
		assert.Equal(t, []string{"c1:2", "c3:4"}, ids(got))
		want, err := json.Marshal(reading("c3", 4, true))
		require.NoError(t, err)
		gotJSON, err := json.Marshal(got[1])
		require.NoError(t, err)
		assert.JSONEq(t, string(want), string(gotJSON), "a reading round-trips")
		require.NoError(t, o2.Done("c3", 4))
		require.NoError(t, o2.Close())

		o3 := open(t, outbox.Config{Dir: dir})
		assert.Equal(t, []string{"c1:2"}, ids(o3.Pending()))
	})
}

func TestOutboxLocked(t *testing.T) {
	dir := t.TempDir()
	o := open(t, outbox.Config{Dir: dir})
	_, err := outbox.Open(outbox.Config{Dir: dir})
	assert.Equal(t, bourse.EUnavailable, bourse.ErrorCode(err), "%v", err)
	require.NoError(t, o.Close())
	open(t, outbox.Config{Dir: dir})

	_, err = outbox.Open(outbox.Config{})
	assert.Equal(t, bourse.EInvalid, bourse.ErrorCode(err))
}

func TestOutboxBound(t *testing.T) {
	t.Run("records", func(t *testing.T) {
		var logs logBuffer
		dir := t.TempDir()
		o := open(t, outbox.Config{Dir: dir, MaxRecords: 3, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		require.NoError(t, o.Append(reading("c1", 1, false)))
		require.NoError(t, o.Append(reading("f1", 7, true)))
		require.NoError(t, o.Append(reading("c2", 1, false)))
		require.NoError(t, o.Append(reading("c3", 1, false)))
		assert.Equal(t, []string{"f1:7", "c2:1", "c3:1"}, ids(o.Pending()), "the oldest non-final went")
		assert.Contains(t, logs.String(), "contract=c1 seq=1")

		require.NoError(t, o.Append(reading("f2", 3, true)))
		require.NoError(t, o.Append(reading("f3", 3, true)))
		assert.Equal(t, []string{"f1:7", "f2:3", "f3:3"}, ids(o.Pending()), "finals push out the others")
		require.NoError(t, o.Append(reading("f4", 3, true)))
		require.NoError(t, o.Append(reading("c4", 1, false)))
		assert.Equal(t, []string{"f1:7", "f2:3", "f3:3", "f4:3"}, ids(o.Pending()),
			"finals are kept beyond the bound; a new non-final has no room")
		assert.Contains(t, logs.String(), "over its bounds")

		require.NoError(t, o.Close())
		o = open(t, outbox.Config{Dir: dir, MaxRecords: 3})
		assert.Equal(t, []string{"f1:7", "f2:3", "f3:3", "f4:3"}, ids(o.Pending()), "the same after a replay")
	})
	t.Run("bytes", func(t *testing.T) {
		o := open(t, outbox.Config{Dir: t.TempDir(), MaxBytes: 1500})
		for i := range 20 {
			require.NoError(t, o.Append(reading(fmt.Sprintf("c%02d", i), 1, i%5 == 0)))
		}
		got := ids(o.Pending())
		assert.Less(t, len(got), 20)
		for _, f := range []string{"c00:1", "c05:1", "c10:1", "c15:1"} {
			assert.Contains(t, got, f, "final")
		}
		assert.Contains(t, got, "c19:1", "the newest")
		assert.NotContains(t, got, "c01:1", "the oldest non-final")
	})
}

// TestOutboxTorn cuts the log inside its last record, as a crash during a
// write would, and corrupts one in the middle: both are skipped.
func TestOutboxTorn(t *testing.T) {
	dir := t.TempDir()
	o := open(t, outbox.Config{Dir: dir})
	for _, c := range []string{"c1", "c2", "c3", "c4"} {
		require.NoError(t, o.Append(reading(c, 1, true)))
	}
	require.NoError(t, o.Close())
	path := filepath.Join(dir, "readings.log")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := bytes.SplitAfter(data, []byte("\n"))
	require.Len(t, lines, 5) // the last is empty
	lines[1] = bytes.Replace(lines[1], []byte(`"c2"`), []byte(`"cX"`), 1)
	lines[3] = lines[3][:len(lines[3])/2]
	require.NoError(t, os.WriteFile(path, bytes.Join(lines, nil), 0o640))

	var logs logBuffer
	o = open(t, outbox.Config{Dir: dir, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	assert.Equal(t, []string{"c1:1", "c3:1"}, ids(o.Pending()))
	assert.Contains(t, logs.String(), "lines=\"[2 4]\"")
	require.NoError(t, o.Append(reading("c5", 1, true)))
	require.NoError(t, o.Close())

	o = open(t, outbox.Config{Dir: dir})
	assert.Equal(t, []string{"c1:1", "c3:1", "c5:1"}, ids(o.Pending()), "the rewritten log appends cleanly")

	t.Run("zeros", func(t *testing.T) {
		// Some file systems leave zeros after a crash where a write was due.
		require.NoError(t, o.Close())
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		require.NoError(t, err)
		_, err = f.Write(make([]byte, 4096))
		require.NoError(t, err)
		require.NoError(t, f.Close())
		o = open(t, outbox.Config{Dir: dir})
		assert.Equal(t, []string{"c1:1", "c3:1", "c5:1"}, ids(o.Pending()))
	})
}

// TestOutboxCompacts keeps the log near its pending readings' size while
// readings come and are acknowledged, or superseded.
func TestOutboxCompacts(t *testing.T) {
	dir := t.TempDir()
	o := open(t, outbox.Config{Dir: dir})
	for seq := uint64(1); seq <= 3000; seq++ {
		require.NoError(t, o.Append(reading("c1", seq, false)))
		if seq%2 == 0 {
			require.NoError(t, o.Done("c1", seq))
		}
		require.NoError(t, o.Append(reading("c2", seq, false)))
	}
	st, err := os.Stat(filepath.Join(dir, "readings.log"))
	require.NoError(t, err)
	assert.Less(t, st.Size(), int64(200<<10))
	assert.Equal(t, []string{"c2:3000"}, ids(o.Pending()))
}

// TestOutboxConcurrent appends and acknowledges from several goroutines,
// for the race detector.
func TestOutboxConcurrent(t *testing.T) {
	o := open(t, outbox.Config{Dir: t.TempDir(), MaxRecords: 5})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			c := fmt.Sprintf("c%d", g)
			for seq := uint64(1); seq <= 200; seq++ {
				assert.NoError(t, o.Append(reading(c, seq, seq == 200)))
				if seq%3 == 0 {
					assert.NoError(t, o.Done(c, seq))
				}
				_ = o.Pending()
			}
		})
	}
	wg.Wait()
	assert.ElementsMatch(t, []string{"c0:200", "c1:200", "c2:200", "c3:200"}, ids(o.Pending()))
}
