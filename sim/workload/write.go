package workload

import (
	"bufio"
	"fmt"
	"io"
)

// Write writes every job of src to w in format f, and how many it wrote.
// See each format's documentation for what it keeps: JSONL keeps every
// field; the CSV formats keep times to the second and only the fields
// they have columns for.
func Write(w io.Writer, f Format, src Source) (int, error) {
	bw := bufio.NewWriter(w)
	var (
		n   int
		err error
	)
	switch f {
	case Alibaba:
		n, err = writeAlibaba(bw, src)
	case Helios:
		n, err = writeHelios(bw, src)
	case JSONL:
		n, err = writeJSONL(bw, src)
	default:
		return 0, fmt.Errorf("workload: format %q is none of alibaba, helios, jsonl", f)
	}
	if err != nil {
		return n, fmt.Errorf("workload: writing %s, job %d: %w", f, n+1, err)
	}
	if err := bw.Flush(); err != nil {
		return n, fmt.Errorf("workload: writing %s: %w", f, err)
	}
	return n, nil
}
