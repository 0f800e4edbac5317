package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/internal/clocktest"
)

// lockedBuffer lets a test read what Progress's own goroutine writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// addConcurrently has goroutines add n jobs to b one at a time, as
// simulations would.
func addConcurrently(b *Bar, goroutines, n int) {
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range n {
				b.Add(1)
			}
		})
	}
	wg.Wait()
}

func TestProgressLog(t *testing.T) {
	c := clocktest.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	var out lockedBuffer
	// Every is long enough that only the test's own Flush writes.
	p := NewProgress(&out, ProgressConfig{Every: time.Hour, Now: c.Now})
	a := p.Bar("posted/1", 1000)
	b := p.Bar("auction/1", 1000)

	addConcurrently(a, 4, 100)
	addConcurrently(b, 4, 50)
	c.Advance(10 * time.Second)
	p.Flush()

	c.Advance(5 * time.Second)
	addConcurrently(a, 4, 150)
	a.Done()
	a.Done() // a second Done is harmless
	addConcurrently(b, 4, 200)
	b.Done()
	p.Wait()

	want := []string{
		`time=2026-01-02T03:04:15.000Z level=INFO msg=progress done=600 total=2000 pct=30.0% runs=0/2 rate="60 jobs/s" eta=23s`,
		`time=2026-01-02T03:04:20.000Z level=INFO msg="run done" run=posted/1 jobs=1000 took=15s rate="67 jobs/s"`,
		`time=2026-01-02T03:04:20.000Z level=INFO msg="run done" run=auction/1 jobs=1000 took=15s rate="67 jobs/s"`,
		`time=2026-01-02T03:04:20.000Z level=INFO msg=progress done=2000 total=2000 pct=100.0% runs=2/2 rate="133 jobs/s" eta=0s`,
	}
	assert.Equal(t, strings.Join(want, "\n")+"\n", out.String())
}

func TestProgressLogUnknownTotal(t *testing.T) {
	c := clocktest.New(time.Unix(0, 0))
	var out lockedBuffer
	p := NewProgress(&out, ProgressConfig{Every: time.Hour, Now: c.Now})
	b := p.Bar("open-ended", 0)
	b.Add(30)
	c.Advance(time.Minute)
	p.Flush()
	assert.Contains(t, out.String(), "eta=unknown")
	b.Done()
	p.Wait()
}

func TestProgressLogPeriodic(t *testing.T) {
	var out lockedBuffer
	p := NewProgress(&out, ProgressConfig{Every: 5 * time.Millisecond})
	b := p.Bar("run", 10)
	b.Add(3)
	assert.Eventually(t, func() bool {
		return strings.Contains(out.String(), "msg=progress done=3 total=10")
	}, 5*time.Second, 5*time.Millisecond, "a line comes without a Flush")
	b.Add(7)
	b.Done()
	p.Wait()
}

// TestProgressTerminal drives the mpb bars into a buffer: what matters is
// that concurrent adds, Done and Wait neither panic nor hang.
func TestProgressTerminal(t *testing.T) {
	var out lockedBuffer
	p := NewProgress(&out, ProgressConfig{Terminal: true})
	bars := []*Bar{p.Bar("posted/1", 2000), p.Bar("auction/1", 2000), p.Bar("open-ended", 0)}
	var wg sync.WaitGroup
	for _, b := range bars {
		wg.Go(func() {
			addConcurrently(b, 4, 250)
			p.Flush()
		})
	}
	wg.Wait()
	// The rate shows while a bar runs; mpb keeps it off a completed one.
	assert.Eventually(t, func() bool {
		return strings.Contains(out.String(), "jobs/s")
	}, 5*time.Second, 10*time.Millisecond)
	for _, b := range bars {
		b.Done()
	}
	finished := make(chan struct{})
	go func() { p.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return")
	}
	s := out.String()
	for _, name := range []string{"posted/1", "auction/1", "open-ended", "1000 / 1000", "done"} {
		assert.Contains(t, s, name)
	}
}

func TestIsTerminal(t *testing.T) {
	assert.False(t, IsTerminal(&bytes.Buffer{}))
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	require.NoError(t, err)
	defer f.Close()
	assert.False(t, IsTerminal(f))
	null, err := os.Open(os.DevNull)
	require.NoError(t, err)
	defer null.Close()
	assert.False(t, IsTerminal(null), "a character device is not a terminal")
}
