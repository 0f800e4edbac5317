package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

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
	assert.Equal(t, exitUsage, code, "a bad value")
	assert.Contains(t, errOut, `--policy "auction": helios-fairshare has no such policy`)

	bad := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("name: x\nserverz: []\n"), 0o644))
	_, errOut, code = simCmd("run", bad)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "bad.yaml:2: serverz: no such field")

	_, errOut, code = simCmd("gen", "../../examples/sim/posted-vs-surge.yaml", "--format", "csv")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, `--format "csv": want alibaba, helios or jsonl`)
}

// TestSimRouteTo: --route-to runs a policy once per routing bound, side
// by side and labelled, and refuses a bound that routes to no server.
func TestSimRouteTo(t *testing.T) {
	scenario := "../../examples/sim/helios-fairshare.yaml"
	out, errOut, code := simCmd("run", scenario, "--policy", "posted", "--route-to", "1,all", "--json", "-o", t.TempDir())
	require.Equal(t, 0, code, errOut)
	var rs []struct{ Policy string }
	require.NoError(t, json.Unmarshal([]byte(out), &rs), out)
	var got []string
	for _, r := range rs {
		got = append(got, r.Policy)
	}
	assert.ElementsMatch(t, []string{"posted+route=1", "posted+route=all"}, got)

	for _, bad := range []string{"0", "some", "-1"} {
		_, errOut, code = simCmd("run", scenario, "--route-to", bad, "-o", t.TempDir())
		assert.Equal(t, exitUsage, code, bad)
		assert.Contains(t, errOut, "want a number from 1 to 100000, or all", bad)
	}
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

// TestSimSignal: bourse sim, sent SIGINT or SIGTERM in the middle of a
// long run, stops and writes the report of what it had, as a process of
// its own (this test binary running the command).
func TestSimSignal(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			out := t.TempDir()
			cmd := exec.Command(os.Args[0], "sim", "run", "../../examples/sim/bench-1m.yaml", "-o", out, "--parallel", "1", "--json")
			cmd.Env = append(os.Environ(), "BOURSE_TEST_MAIN=1")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			require.NoError(t, cmd.Start())
			time.Sleep(1500 * time.Millisecond) // a million jobs take minutes: it is under way
			sent := time.Now()
			require.NoError(t, cmd.Process.Signal(sig))
			kill := time.AfterFunc(60*time.Second, func() { _ = cmd.Process.Kill() }) // one that ignores the signal
			err := cmd.Wait()
			kill.Stop()
			took := time.Since(sent)
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, "stderr: %s", stderr.String())
			assert.Equal(t, 1, ee.ExitCode())
			// The run's end, as its progress line logs it, is within a
			// second of the signal; writing the report follows (its plots
			// take seconds under the race detector, a tenth of one
			// without).
			m := regexp.MustCompile(`time=(\S+) level=INFO msg="run done"`).FindStringSubmatch(stderr.String())
			require.NotNil(t, m, stderr.String())
			done, perr := time.Parse(time.RFC3339Nano, m[1])
			require.NoError(t, perr)
			t.Logf("after %v: the run stopped in %v, the process exited in %v", sig, done.Sub(sent).Round(time.Millisecond), took.Round(time.Millisecond))
			// The bounds are generous because this is no benchmark: a
			// run that ignored the signal would go on for minutes. A
			// second is what it takes on an idle machine (the figure
			// logged above); on two cores shared with other test
			// binaries under the race detector it took up to 4 s.
			assert.Less(t, done.Sub(sent), 10*time.Second, "the run stopped at the signal, not at its end")
			assert.Less(t, took, 40*time.Second, "and the report was written")
			assert.Contains(t, stderr.String(), "sim: interrupted")
			assert.Contains(t, stderr.String(), "the report in "+out+" holds the runs as far as they went")

			var rs []struct {
				Interrupted bool `json:"interrupted"`
				Summary     struct {
					Jobs int `json:"jobs"`
				} `json:"summary"`
			}
			require.NoError(t, json.Unmarshal(stdout.Bytes(), &rs), stdout.String())
			require.Len(t, rs, 1)
			assert.True(t, rs[0].Interrupted)
			assert.Positive(t, rs[0].Summary.Jobs)
			assert.Less(t, rs[0].Summary.Jobs, 1_000_000)
			for _, f := range []string{"summary.json", "summary.csv", "series.csv", "index.html"} {
				assert.FileExists(t, filepath.Join(out, f))
			}
		})
	}
}

// TestSimLearn runs bourse sim learn small: the learner, the scenario's
// other policies and each fixed price of a grid of three, side by side
// with each seed's best fixed price, and the report folder with the
// benchmark's own files.
func TestSimLearn(t *testing.T) {
	dir := t.TempDir()
	out, errOut, code := simCmd("learn", "../../examples/sim/known-demand.yaml", "--jobs", "300", "--levels", "3", "--seed", "1,2", "-o", dir)
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `(?m)^metric +best fixed +learning +posted +surge$`, out)
	assert.Regexp(t, `(?m)^  ×1\.414214 +revenue +[0-9.]+ +welfare +[0-9.]+ +best on [0-2]$`, out)
	assert.Regexp(t, `(?m)^learner / best fixed price of its seed: revenue \d+\.\d%`, out)
	assert.Contains(t, out, "12 runs, 3600 jobs")
	for _, name := range []string{"index.html", "hindsight.json", "regret.csv", "prices.svg"} {
		_, err := os.Stat(filepath.Join(dir, name))
		assert.NoError(t, err, name)
	}
	_, errOut, code = simCmd("learn", "../../examples/sim/known-demand.yaml", "--learner", "posted", "-o", dir)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, `known-demand has no learning policy "posted"`)
}
