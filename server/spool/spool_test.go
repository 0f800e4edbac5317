package spool_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/server/spool"
)

// stream is a fake output stream: it stores what is sent, or fails while
// down, and reassembles each contract's output as a reader would, placing
// every chunk at its offset.
type stream struct {
	mu     sync.Mutex
	down   bool
	chunks []spool.Chunk
}

func (s *stream) send(_ context.Context, c spool.Chunk) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return errors.New("no responders")
	}
	c.Data = bytes.Clone(c.Data)
	s.chunks = append(s.chunks, c)
	return nil
}

func (s *stream) setDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
}

// read returns a contract's streams as placed by offset, and the ends
// seen, by part.
func (s *stream) read(id string) (map[string][]byte, map[string]*protocol.OutputEnd) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out, ends := map[string][]byte{}, map[string]*protocol.OutputEnd{}
	for _, c := range s.chunks {
		if c.Contract != id {
			continue
		}
		if c.Stream == protocol.StreamEnd {
			ends[c.Part] = c.End
			continue
		}
		b := out[c.Stream]
		if int64(len(b)) < c.Offset {
			panic("a gap in " + c.Stream)
		}
		b = append(b[:c.Offset], c.Data...)
		out[c.Stream] = b
	}
	return out, ends
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func open(t *testing.T, dir string, st *stream, edit func(*spool.Config)) *spool.Spool {
	t.Helper()
	cfg := spool.Config{Dir: dir, Send: st.send, LogCap: 1 << 20, Logger: quiet()}
	if edit != nil {
		edit(&cfg)
	}
	sp, err := spool.Open(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sp.Close() })
	return sp
}

func write(t *testing.T, path, text string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o750))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	require.NoError(t, err)
	_, err = f.WriteString(text)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// untar lists an archive's files and their contents.
func untar(t *testing.T, data []byte) map[string]string {
	t.Helper()
	out := map[string]string{}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		b, err := io.ReadAll(tr)
		require.NoError(t, err)
		out[h.Name] = string(b)
	}
}

// TestSpool: a running job's output goes out as it is written; once it
// has exited, the log's end, then its results packed and their end; a
// stream that is down loses nothing, and nothing is sent twice but as a
// repeat a reader places at its offset.
func TestSpool(t *testing.T) {
	dir := t.TempDir()
	st := &stream{}
	sp := open(t, dir, st, nil)
	ctx := context.Background()
	c1 := filepath.Join(dir, "c1")
	write(t, filepath.Join(c1, "stdout"), "epoch 1\n")
	write(t, filepath.Join(c1, "stderr"), "warning: slow\n")
	sp.Pass(ctx)
	got, ends := st.read("c1")
	assert.Equal(t, "epoch 1\n", string(got["stdout"]))
	assert.Equal(t, "warning: slow\n", string(got["stderr"]))
	assert.Empty(t, ends, "no end while the job runs")

	st.setDown(true)
	write(t, filepath.Join(c1, "stdout"), "epoch 2\n")
	sp.Pass(ctx)
	st.setDown(false)
	write(t, filepath.Join(c1, "stdout"), "epoch 3\n")
	write(t, filepath.Join(c1, "results", "model.bin"), "weights")
	write(t, filepath.Join(c1, "results", "logs", "loss.csv"), "1,0.5\n")
	write(t, filepath.Join(c1, "exit"), "0\n")
	sp.Pass(ctx)
	got, ends = st.read("c1")
	assert.Equal(t, "epoch 1\nepoch 2\nepoch 3\n", string(got["stdout"]), "nothing lost to the outage")
	require.NotNil(t, ends[protocol.PartLog])
	assert.Equal(t, protocol.OutputEnd{Stdout: 24, Stderr: 14, Cap: 1 << 20}, *ends[protocol.PartLog])
	require.NotNil(t, ends[protocol.PartResults])
	files := untar(t, got["results"])
	assert.Equal(t, map[string]string{"logs/": "", "logs/loss.csv": "1,0.5\n", "model.bin": "weights"}, files)
	assert.Equal(t, int64(len(got["results"])), ends[protocol.PartResults].Results)

	n := len(st.chunks)
	sp.Pass(ctx)
	assert.Len(t, st.chunks, n, "nothing more once all is sent")
}

// TestSpoolRestart: a spool opened on the directory of an earlier run
// ends the jobs that run left (their processes died with it) and sends
// their output from where the earlier run had got to.
func TestSpoolRestart(t *testing.T) {
	dir := t.TempDir()
	st := &stream{}
	first, err := spool.Open(spool.Config{Dir: dir, Send: st.send, Logger: quiet()})
	require.NoError(t, err)
	_, err = spool.Open(spool.Config{Dir: dir, Send: st.send, Logger: quiet()})
	require.Error(t, err, "one spool at a time")
	write(t, filepath.Join(dir, "c1", "stdout"), strings.Repeat("a", 100))
	first.Pass(context.Background())
	require.NoError(t, first.Close())
	write(t, filepath.Join(dir, "c1", "stdout"), strings.Repeat("b", 50))

	again := open(t, dir, st, nil)
	exit, err := os.ReadFile(filepath.Join(dir, "c1", "exit"))
	require.NoError(t, err)
	assert.Equal(t, "lost\n", string(exit))
	again.Pass(context.Background())
	got, ends := st.read("c1")
	assert.Equal(t, strings.Repeat("a", 100)+strings.Repeat("b", 50), string(got["stdout"]))
	assert.Equal(t, int64(100), st.chunks[1].Offset, "the second run starts where the first stopped")
	assert.NotNil(t, ends[protocol.PartLog])
	assert.NotNil(t, ends[protocol.PartResults], "an empty archive for a job that left no results")
}

// TestSpoolBounds: a large stream goes out in chunks of at most
// MaxOutputChunk, a bounded number a pass; results past the cap and links
// are left out and named; sent output is removed after Keep.
func TestSpoolBounds(t *testing.T) {
	dir := t.TempDir()
	st := &stream{}
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	sp := open(t, dir, st, func(c *spool.Config) {
		c.ResultsCap = 8 << 10
		c.Keep = time.Hour
		c.Now = func() time.Time { return now }
	})
	big := strings.Repeat("x", 70*protocol.MaxOutputChunk)
	write(t, filepath.Join(dir, "c1", "stdout"), big)
	write(t, filepath.Join(dir, "c1", "results", "small"), "ok")
	write(t, filepath.Join(dir, "c1", "results", "huge"), strings.Repeat("y", 10<<10))
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(dir, "c1", "results", "passwd")))
	write(t, filepath.Join(dir, "c1", "exit"), "0\n")
	sp.Pass(context.Background())
	for _, c := range st.chunks {
		assert.LessOrEqual(t, len(c.Data), protocol.MaxOutputChunk)
	}
	got, ends := st.read("c1")
	assert.Len(t, got["stdout"], 64*protocol.MaxOutputChunk, "a pass sends at most 64 chunks of a contract")
	assert.Nil(t, ends[protocol.PartLog])
	sp.Pass(context.Background())
	got, ends = st.read("c1")
	assert.Equal(t, big, string(got["stdout"]))
	require.NotNil(t, ends[protocol.PartResults])
	assert.Equal(t, map[string]string{"small": "ok"}, untar(t, got["results"]))
	assert.ElementsMatch(t, []string{"huge: 10240 bytes, over the results cap", "passwd: not a regular file"}, ends[protocol.PartResults].Omitted)
	assert.LessOrEqual(t, int64(len(got["results"])), int64(8<<10))

	now = now.Add(59 * time.Minute)
	sp.Pass(context.Background())
	assert.DirExists(t, filepath.Join(dir, "c1"))
	now = now.Add(2 * time.Minute)
	sp.Pass(context.Background())
	assert.NoDirExists(t, filepath.Join(dir, "c1"), "removed once kept Keep")
}
