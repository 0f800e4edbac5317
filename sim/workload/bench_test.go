package workload

import (
	"bytes"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// written is n generated jobs in format f.
func written(tb testing.TB, f Format, n int) []byte {
	tb.Helper()
	g, err := NewGenerator(testSpec(), 1)
	require.NoError(tb, err)
	var buf bytes.Buffer
	_, err = Write(&buf, f, Limit(g, n, 0))
	require.NoError(tb, err)
	return buf.Bytes()
}

func BenchmarkRead(b *testing.B) {
	for _, f := range []Format{Alibaba, Helios, JSONL} {
		b.Run(string(f), func(b *testing.B) {
			data := written(b, f, 100000)
			b.ReportAllocs()
			b.SetBytes(int64(len(data)) / 100000)
			r, err := NewReader(bytes.NewReader(data), f, ReadOptions{})
			require.NoError(b, err)
			start := time.Now()
			for b.Loop() {
				if _, err := r.Next(); err == io.EOF {
					r, _ = NewReader(bytes.NewReader(data), f, ReadOptions{})
				} else if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "jobs/s")
		})
	}
}

// TestReadMemory: a reader holds nothing per row, so a long trace,
// streamed, leaves the heap as it was.
func TestReadMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("a long trace")
	}
	g, err := NewGenerator(testSpec(), 1)
	require.NoError(t, err)
	pr, pw := io.Pipe()
	go func() { _, err := Write(pw, Alibaba, Limit(g, 300000, 0)); pw.CloseWithError(err) }()
	r, err := NewReader(pr, Alibaba, ReadOptions{})
	require.NoError(t, err)
	var before, after runtime.MemStats
	for i := 0; ; i++ {
		if i == 1000 {
			runtime.GC()
			runtime.ReadMemStats(&before)
		}
		_, err := r.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	assert.Less(t, int64(after.HeapInuse)-int64(before.HeapInuse), int64(1<<20), "heap grew")
}
