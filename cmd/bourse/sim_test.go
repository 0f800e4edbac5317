package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/sim/workload"
)

// simCmd runs `bourse sim args…`.
func simCmd(args ...string) (stdout, stderr string, code int) {
	return bourseCmd(append([]string{"sim"}, args...)...)
}

// TestSimRunTwice is the promise a simulation makes: the same scenario and
// seed write the same files, byte for byte, and the table says what ran.
func TestSimRunTwice(t *testing.T) {
	scenario := "../../examples/sim/helios-fairshare.yaml"
	dirs := []string{t.TempDir(), t.TempDir()}
	for _, d := range dirs {
		out, errOut, code := simCmd("compare", scenario, "-o", d, "--contract-log")
		require.Equal(t, 0, code, errOut)
		assert.Regexp(t, `(?m)^metric +fair-use +posted +surge$`, out)
		assert.Regexp(t, `(?m)^jobs completed +\d+ +\d+ +\d+$`, out)
		assert.Contains(t, out, "3 runs, 1200 jobs")
		assert.Contains(t, errOut, "run done", "progress goes to stderr as log lines when it is not a terminal")
	}
	names := func(d string) []string {
		es, err := os.ReadDir(d)
		require.NoError(t, err)
		var ns []string
		for _, e := range es {
			ns = append(ns, e.Name())
		}
		return ns
	}
	got := names(dirs[0])
	for _, want := range []string{"index.html", "summary.json", "summary.csv", "series.csv", "price.png", "price.svg",
		"utilization.svg", "welfare.svg", "fairness.svg", "contracts-posted-1.jsonl"} {
		assert.Contains(t, got, want)
	}
	require.Equal(t, got, names(dirs[1]))
	for _, n := range got {
		a, err := os.ReadFile(filepath.Join(dirs[0], n))
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(dirs[1], n))
		require.NoError(t, err)
		assert.True(t, bytes.Equal(a, b), "%s differs between two runs of one seed", n)
	}

	out, errOut, code := simCmd("run", scenario, "--policy", "surge", "--seed", "7", "--json", "-o", t.TempDir())
	require.Equal(t, 0, code, errOut)
	var rs []struct {
		Policy string
		Seed   uint64
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rs), out)
	require.Len(t, rs, 1)
	assert.Equal(t, "surge", rs[0].Policy)
	assert.Equal(t, uint64(7), rs[0].Seed)
}

func TestSimErrors(t *testing.T) {
	_, errOut, code := simCmd("run", "../../examples/sim/helios-fairshare.yaml", "--policy", "auction", "-o", t.TempDir())
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, `--policy "auction": helios-fairshare has no such policy`)

	bad := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("name: x\nserverz: []\n"), 0o644))
	_, errOut, code = simCmd("run", bad)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "bad.yaml:2: serverz: no such field")

	_, errOut, code = simCmd("gen", "../../examples/sim/posted-vs-surge.yaml", "--format", "csv")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, `--format "csv": want alibaba, helios or jsonl`)
}

// TestSimGen writes a scenario's generated workload as each trace format
// and reads it back: a generator's jobs can be replayed as a trace.
func TestSimGen(t *testing.T) {
	for _, f := range []workload.Format{workload.Alibaba, workload.Helios, workload.JSONL} {
		t.Run(string(f), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "w."+string(f))
			_, errOut, code := simCmd("gen", "../../examples/sim/posted-vs-surge.yaml", "--format", string(f), "--jobs", "50", "--seed", "3", "-o", path)
			require.Equal(t, 0, code, errOut)
			assert.Contains(t, errOut, "50 jobs written to "+path)
			file, err := os.Open(path)
			require.NoError(t, err)
			defer file.Close()
			r, err := workload.NewReader(file, f, workload.ReadOptions{})
			require.NoError(t, err)
			n := 0
			for {
				if _, err := r.Next(); err != nil {
					break
				}
				n++
			}
			assert.Equal(t, 50, n)
		})
	}
	a, _, code := simCmd("gen", "../../examples/sim/posted-vs-surge.yaml", "--jobs", "20")
	require.Equal(t, 0, code)
	b, _, _ := simCmd("gen", "../../examples/sim/posted-vs-surge.yaml", "--jobs", "20")
	assert.Equal(t, a, b, "one seed, one workload")
	assert.Equal(t, 20, strings.Count(a, "\n"))
}
