package workload

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "write the sample traces under examples/sim/traces again")

// sampleDir is where the repository keeps the samples.
const sampleDir = "../../examples/sim/traces"

// TestSamples: the committed samples are what the generator makes today,
// so they cannot rot, and each reads back whole.
func TestSamples(t *testing.T) {
	if *update {
		require.NoError(t, os.MkdirAll(sampleDir, 0o755))
		require.NoError(t, Samples(sampleDir))
	}
	dir := t.TempDir()
	require.NoError(t, Samples(dir))
	for _, s := range samples {
		t.Run(s.file, func(t *testing.T) {
			made, err := os.ReadFile(filepath.Join(dir, s.file))
			require.NoError(t, err)
			committed, err := os.ReadFile(filepath.Join(sampleDir, s.file))
			require.NoError(t, err, "make it with go generate ./sim/workload")
			assert.True(t, bytes.Equal(made, committed), "%s is not what the generator makes today: go generate ./sim/workload, and look at why it changed", s.file)

			jobs, r, err := readAll(t, s.format, string(committed), ReadOptions{})
			require.NoError(t, err)
			assert.Len(t, jobs, s.spec.Jobs)
			assert.Zero(t, r.Skipped()+r.Dropped())
		})
	}
}
