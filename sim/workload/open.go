package workload

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Open makes the Source a Spec describes: its generator seeded with seed
// (a trace needs no seed), or its trace file read from dir unless its path
// is absolute, cut to the spec's Jobs and Horizon. Close the Closer when
// done. A trace's Source also has the Reader's Skipped and Dropped, and
// its errors name the file.
func Open(s Spec, dir string, seed uint64) (Source, io.Closer, error) {
	if err := s.Validate(); err != nil {
		return nil, nil, fmt.Errorf("workload: %w", err)
	}
	if g := s.Generator; g != nil {
		gen, err := NewGenerator(*g, seed)
		if err != nil {
			return nil, nil, err
		}
		return Limit(gen, s.Jobs, s.Horizon), io.NopCloser(nil), nil
	}
	t := s.Trace
	path := t.File
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("workload: trace: %w", err)
	}
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("workload: trace %s: %w", path, err)
		}
		r = gz
	}
	rd, err := NewReader(r, t.Format, ReadOptions{SkipBadRows: t.SkipBadRows, Utilization: t.Utilization, Clients: t.Clients})
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("workload: trace %s: %w", path, err)
	}
	var src Source = rd
	if t.TimeScale != 0 && t.TimeScale != 1 {
		src = scaled{src: rd, f: t.TimeScale}
	}
	tr := &traceFile{Source: Limit(src, s.Jobs, s.Horizon), Reader: rd, path: path, f: f}
	return tr, tr, nil
}

// traceFile is an open trace: its jobs, its counts and its file.
type traceFile struct {
	Source
	*Reader
	path string
	f    *os.File
}

func (t *traceFile) Next() (Job, error) {
	j, err := t.Source.Next()
	if err != nil && err != io.EOF {
		return j, fmt.Errorf("workload: trace %s: %w", t.path, err)
	}
	return j, err
}

func (t *traceFile) Close() error { return t.f.Close() }

// Expected is how many jobs a workload will make at most, for a progress
// bar's total: its Jobs if set, else, for a trace, its rows (lines, less
// a CSV's header), counted in one pass over the file; 0 if unknown (a
// generator stopped by its horizon alone). A trace's count includes the
// rows it will drop: an estimate from above.
func Expected(s Spec, dir string) (int64, error) {
	if s.Jobs > 0 || s.Trace == nil {
		return int64(s.Jobs), nil
	}
	path := s.Trace.File
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("workload: trace: %w", err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			return 0, fmt.Errorf("workload: trace %s: %w", path, err)
		}
		r = gz
	}
	var lines int64
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Read(buf)
		lines += int64(bytes.Count(buf[:n], []byte{'\n'}))
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, fmt.Errorf("workload: trace %s: %w", path, err)
		}
	}
	if s.Trace.Format != JSONL && lines > 0 {
		lines-- // the header
	}
	return lines, nil
}
