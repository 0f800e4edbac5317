package workload

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExpected: a progress bar's total is the workload's jobs if it has a
// limit, else a trace's rows, header left out; unknown for a generator
// stopped by its horizon alone.
func TestExpected(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.csv"), []byte(alibabaRowsOK), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "j.jsonl"), []byte("{}\n{}\n{}\n"), 0o644))
	for _, tc := range []struct {
		name string
		spec Spec
		want int64
	}{
		{"alibaba", Spec{Trace: &TraceSpec{Format: Alibaba, File: "a.csv"}}, 7},
		{"jsonl", Spec{Trace: &TraceSpec{Format: JSONL, File: "j.jsonl"}}, 3},
		{"limited", Spec{Jobs: 2, Trace: &TraceSpec{Format: Alibaba, File: "a.csv"}}, 2},
		{"horizon", Spec{Horizon: time.Hour, Generator: &GeneratorSpec{}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Expected(tc.spec, dir)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	_, err := Expected(Spec{Trace: &TraceSpec{Format: Alibaba, File: "none.csv"}}, dir)
	assert.ErrorIs(t, err, os.ErrNotExist)
}
