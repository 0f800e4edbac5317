package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/scenario"
)

// lockedBuffer is a buffer a command writes while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// busyNVML is go-nvml's mock of a DGX A100 whose every process keeps its
// GPU's SMs busy half the time: per-process samples for each process of
// the machine, read from /proc, at each call. The meter keeps the job's.
func busyNVML(...nvml.LibraryOption) nvml.Interface {
	lib := dgxa100.New()
	for _, d := range lib.Devices {
		dev := d.(*dgxa100.Device)
		dev.GetProcessUtilizationFunc = func(uint64) ([]nvml.ProcessUtilizationSample, nvml.Return) {
			entries, err := os.ReadDir("/proc")
			if err != nil {
				return nil, nvml.ERROR_UNKNOWN
			}
			now := uint64(time.Now().UnixMicro())
			var out []nvml.ProcessUtilizationSample
			for _, e := range entries {
				if pid, err := strconv.Atoi(e.Name()); err == nil {
					out = append(out, nvml.ProcessUtilizationSample{Pid: uint32(pid), TimeStamp: now, SmUtil: 50})
				}
			}
			return out, nvml.SUCCESS
		}
		dev.GetTotalEnergyConsumptionFunc = func() (uint64, nvml.Return) { return uint64(time.Now().UnixMilli()) * 300, nvml.SUCCESS }
	}
	return lib
}

func noNVML(...nvml.LibraryOption) nvml.Interface {
	return &mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }}
}

// startServer runs `bourse server` with config, on openNVML, until the
// test ends, and returns its stderr.
func startServer(t testing.TB, openNVML func(...nvml.LibraryOption) nvml.Interface, config string) *lockedBuffer {
	t.Helper()
	return startServerOn(t, openNVML, openImages, config)
}

// startServerOn is startServer with openImages for the container runner's
// image store.
func startServerOn(t testing.TB, openNVML func(...nvml.LibraryOption) nvml.Interface, openImages imageStore, config string) *lockedBuffer {
	t.Helper()
	stderr := &lockedBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := newServerCmdOn(openNVML, openImages)
	cmd.SetArgs([]string{"--config", writeConfig(t, "server.yaml", config)})
	cmd.SetOut(stderr)
	cmd.SetErr(stderr)
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("bourse server: %v\n%s", err, stderr)
			}
		case <-time.After(20 * time.Second):
			t.Errorf("bourse server did not stop")
		}
	})
	return stderr
}

// TestRealJobs is the life of a real job as a new user lives it: ada
// offers a program, watches it run, reads its logs live with bourse bid
// logs --follow, lets it finish (or kills it), fetches its results, and
// the contract settles on the use NVML metered (go-nvml's mock, here); bob
// cannot read those logs; a server without a meter refuses the job and
// names the fallback.
func TestRealJobs(t *testing.T) {
	b := startBidMarket(t, []scenario.ServerSpec{}...)
	job := os.Args[0]
	common := `
nats: {url: ` + b.m.URL() + `}
currency: {code: CRED, scale: 2}
policy: {kind: reserve}
heartbeat: 100ms
sample_every: 50ms
`
	gpu1 := startServer(t, busyNVML, "id: gpu1\nnvml: required\noutbox_dir: "+t.TempDir()+common+
		"runner: {kind: process, allowed: ["+job+"], output_dir: "+t.TempDir()+", grace: 2s, allow_env: [GREETING]}\n")
	bare := startServer(t, noNVML, "id: bare\ngpus: [{count: 1, model: H100, memory_mib: 81920}]\n"+common+
		"runner: {kind: process, allowed: ["+job+"], output_dir: "+t.TempDir()+"}\n")
	require.Eventually(t, func() bool {
		return strings.Contains(gpu1.String(), "msg=registered") && strings.Contains(bare.String(), "msg=registered")
	}, 10*time.Second, 50*time.Millisecond,
		"the servers did not register:\n%s\n%s", gpu1, bare)
	assert.Contains(t, gpu1.String(), "meter: nvml: the SM utilisation of each job's processes on 8 GPUs NVML found\n")
	assert.Contains(t, gpu1.String(), "policy: reserve: takes any price")
	assert.Contains(t, bare.String(), "meter: none: no NVIDIA driver (NVML: library not found), so process jobs are refused; meter_fallback: full_use")

	offer := func(t *testing.T, model string, steps int) (protocol.ContractView, string, int) {
		t.Helper()
		out, errOut, code := b.bid("ada", "offer", "--json", "--gpus", "1", "--model", model, "--price", "0.50", "--time-limit", "2m",
			"--command", job, "--arg="+jobFlag, "--arg=train", "--arg="+strconv.Itoa(steps))
		var r struct{ Contract *protocol.ContractView }
		if code == 0 {
			require.NoError(t, json.Unmarshal([]byte(out), &r), out)
			require.NotNil(t, r.Contract, out)
			return *r.Contract, errOut, code
		}
		return protocol.ContractView{}, errOut, code
	}
	background := func(id string, args ...string) (out *lockedBuffer, errOut *lockedBuffer, done chan int) {
		out, errOut, done = &lockedBuffer{}, &lockedBuffer{}, make(chan int, 1)
		full := append([]string{"bid", "--nats", b.m.URL(), "--id", id, "--timeout", "5s"}, args...)
		go func() { done <- run(context.Background(), full, out, errOut) }()
		return out, errOut, done
	}
	wait := func(t *testing.T, done chan int, what string) int {
		t.Helper()
		select {
		case code := <-done:
			return code
		case <-time.After(30 * time.Second):
			t.Fatalf("%s did not end", what)
			return -1
		}
	}
	t.Run("NoMeter", func(t *testing.T) {
		_, errOut, code := b.bid("ada", "offer", "--server", "bare", "--gpus", "1", "--model", "H100", "--price", "0.01", "--time-limit", "1m",
			"--command", job, "--arg="+jobFlag, "--arg=train", "--arg=1")
		assert.Equal(t, exitRefused, code, "the market said no")
		for _, want := range []string{"bare: unmetered: this server cannot measure GPU use (no NVIDIA driver", "meter_fallback: full_use", "U = GPUs × T"} {
			assert.Contains(t, errOut, want)
		}
	})

	t.Run("Finishes", func(t *testing.T) {
		k, errOut, code := offer(t, "A100", 15)
		require.Equal(t, 0, code, errOut)
		logs, logErr, logsDone := background("ada", "logs", "--follow", k.ID)
		watch, _, watchDone := background("ada", "watch", k.ID)
		require.Eventually(t, func() bool { return strings.Contains(logs.String(), "step 3\n") }, 10*time.Second, 20*time.Millisecond,
			"no live logs: %q %q", logs, logErr)
		assert.NotContains(t, logs.String(), "step 15\n", "the logs came live, before the job ended")
		require.Equal(t, 0, wait(t, logsDone, "bid logs --follow"), logErr.String())
		var want strings.Builder
		for i := 1; i <= 15; i++ {
			want.WriteString("step " + strconv.Itoa(i) + "\n")
		}
		assert.Equal(t, want.String(), logs.String(), "all of stdout, once, in order")
		assert.Equal(t, "loss 0.5\n", logErr.String(), "stderr on stderr")
		assert.Equal(t, 0, wait(t, watchDone, "bid watch"))
		assert.Contains(t, watch.String(), "metered by nvml")

		got := b.waitState("ada", k.ID, contract.StateSettled)
		assert.Equal(t, contract.ReasonCompleted, got.Reason)
		assert.Equal(t, contract.MeterNVML, got.Meter, "the contract says how it was measured")
		require.NotNil(t, got.Reading)
		u, tSecs := got.Reading.U, decimal.New(int64(got.Reading.T), -9)
		assert.True(t, u.GreaterThan(tSecs.Mul(decimal.RequireFromString("0.3"))) && u.LessThan(tSecs.Mul(decimal.RequireFromString("0.6"))),
			"U = %s for T = %s: NVML saw the job's process half busy", u, tSecs)
		st, err := contract.Charge(got.Terms, got.Reading.Usage(), 2)
		require.NoError(t, err)
		assert.True(t, got.Charge.IsPositive() && got.Charge.Equal(st.Charge), "charged %s, want %s for what was metered", got.Charge, st.Charge)
		assert.True(t, got.Charge.Add(got.Refund).Equal(got.Terms.Prepayment))

		dir := filepath.Join(t.TempDir(), "results")
		out, errOut, code := b.bid("ada", "results", k.ID, "-o", dir)
		require.Equal(t, 0, code, errOut)
		assert.Contains(t, out, "ckpt/model.txt\nnotes.txt\n2 files in "+dir)
		data, err := os.ReadFile(filepath.Join(dir, "ckpt", "model.txt"))
		require.NoError(t, err)
		assert.Equal(t, "weights\n", string(data))

		_, errOut, code = b.bid("bob", "logs", k.ID)
		assert.Equal(t, exitRefused, code, "bob read ada's logs")
		assert.Contains(t, errOut, "not_found")
		_, errOut, code = b.bid("bob", "results", k.ID, "-o", t.TempDir())
		assert.Equal(t, exitRefused, code, "bob fetched ada's results")
		assert.Contains(t, errOut, "not_found")
	})

	t.Run("Killed", func(t *testing.T) {
		k, errOut, code := offer(t, "A100", 1000)
		require.Equal(t, 0, code, errOut)
		logs, logErr, logsDone := background("ada", "logs", "--follow", k.ID)
		require.Eventually(t, func() bool { return strings.Contains(logs.String(), "step 2\n") }, 10*time.Second, 20*time.Millisecond,
			"no live logs: %q %q", logs, logErr)
		_, errOut, code = b.bid("ada", "kill", k.ID)
		require.Equal(t, 0, code, errOut)
		require.Equal(t, 0, wait(t, logsDone, "bid logs --follow"), logErr.String())
		got := b.waitState("ada", k.ID, contract.StateSettled)
		assert.Equal(t, contract.ReasonKilled, got.Reason)
		assert.True(t, got.Charge.IsPositive())

		dir := t.TempDir()
		out, errOut, code := b.bid("ada", "results", k.ID, "-o", dir)
		require.Equal(t, 0, code, errOut)
		assert.Contains(t, out, "notes.txt\n1 files in", "what the job had left when it was killed")
		again, _, _ := b.bid("ada", "logs", k.ID)
		assert.Equal(t, logs.String(), again, "the logs read after the end are those read live")
	})
	t.Run("Servers", func(t *testing.T) {
		// What each server runs, as it says: the programs a job may
		// name, exactly, and the meter; a refusal names the list.
		out := b.ok("ada", "servers")
		assert.Regexp(t, `(?m)^bare +CRED +1 +1 +1× H100 80 GiB +process +none +`+regexp.QuoteMeta(job)+`; files up to 1024 MiB `, out)
		assert.Regexp(t, `(?m)^gpu1 +CRED +8 +\d +8× A100 \d+ GiB +process +nvml +`+regexp.QuoteMeta(job)+`; files up to 1024 MiB `, out)
		_, errOut, code := b.bid("ada", "offer", "--server", "gpu1", "--gpus", "1", "--price", "0.5", "--command", "bourse.test")
		assert.Equal(t, exitRefused, code)
		assert.Contains(t, errOut, `"bourse.test" is not a program this server runs: it runs `+job)
	})

	t.Run("Files", func(t *testing.T) {
		// ada's folder goes with her offer: her job reads it in its
		// working folder, and leaves what it read in its results; she is
		// charged for what was metered, and show names the files.
		folder := t.TempDir()
		require.NoError(t, os.Mkdir(filepath.Join(folder, "data"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(folder, "data", "x.csv"), []byte("ada's data\n"), 0o644))
		out, errOut, code := b.bid("ada", "offer", "--json", "--gpus", "1", "--model", "A100", "--price", "0.50", "--time-limit", "2m",
			"--command", job, "--arg="+jobFlag, "--arg=read", "--arg=data/x.csv", "--files", folder)
		require.Equal(t, 0, code, errOut)
		var r protocol.OfferReply
		require.NoError(t, json.Unmarshal([]byte(out), &r))
		require.NotNil(t, r.Contract)
		id := r.Contract.ID
		require.NotNil(t, r.Contract.Terms.Job.Files, "the terms name the files")
		got := b.waitState("ada", id, contract.StateSettled)
		assert.Equal(t, contract.ReasonCompleted, got.Reason)
		require.NotNil(t, got.Reading)
		st, err := contract.Charge(got.Terms, got.Reading.Usage(), 2)
		require.NoError(t, err)
		assert.True(t, got.Charge.IsPositive() && got.Charge.Equal(st.Charge), "charged %s, want %s for what was metered", got.Charge, st.Charge)
		assert.Equal(t, "ada's data\n", b.ok("ada", "logs", "--follow", id))
		dir := filepath.Join(t.TempDir(), "results")
		b.ok("ada", "results", id, "-o", dir)
		data, err := os.ReadFile(filepath.Join(dir, "seen.txt"))
		require.NoError(t, err)
		assert.Equal(t, "ada's data\n", string(data))
		assert.Contains(t, b.ok("ada", "show", id), "Files        "+got.Terms.Job.Files.Digest+" (")
		assert.Regexp(t, `(?m)^gpu1 .*; files up to 1024 MiB `, b.ok("ada", "servers"))

		_, errOut, code = b.bid("ada", "offer", "--gpus", "1", "--price", "0.5", "--files", folder)
		assert.Equal(t, exitUsage, code, errOut)
		assert.Contains(t, errOut, "--files are for a program or an image to work on")
	})

	t.Run("Export", func(t *testing.T) {
		// --export gives the job a variable, as Slurm's: by value, or by
		// name from the shell; one the server does not allow is refused
		// before any money is held.
		t.Setenv("GREETING", "from the shell")
		for _, tc := range []struct{ export, want string }{{"GREETING=hello world", "GREETING=hello world\n"}, {"GREETING", "GREETING=from the shell\n"}} {
			out, errOut, code := b.bid("ada", "offer", "--json", "--gpus", "1", "--model", "A100", "--price", "0.50", "--time-limit", "2m",
				"--command", job, "--arg="+jobFlag, "--arg=env", "--arg=GREETING", "--export", tc.export)
			require.Equal(t, 0, code, errOut)
			var r protocol.OfferReply
			require.NoError(t, json.Unmarshal([]byte(out), &r))
			require.NotNil(t, r.Contract)
			b.waitState("ada", r.Contract.ID, contract.StateSettled)
			assert.Equal(t, tc.want, b.ok("ada", "logs", "--follow", r.Contract.ID), "--export %s", tc.export)
		}
		_, errOut, code := b.bid("ada", "offer", "--gpus", "1", "--model", "A100", "--price", "0.50", "--time-limit", "2m",
			"--command", job, "--arg="+jobFlag, "--arg=env", "--arg=TOKEN", "--export", "TOKEN=x")
		assert.Equal(t, exitRefused, code, errOut)
		assert.Contains(t, errOut, "may not set TOKEN")
		_, errOut, code = b.bid("ada", "offer", "--gpus", "1", "--price", "0.5", "--export", "GREETING=hi")
		assert.Equal(t, exitUsage, code, errOut)
		assert.Contains(t, errOut, "--export needs --command or --image")
	})

	t.Run("WaitAndShow", func(t *testing.T) {
		// bid wait exits with the job's own status; show names it, the
		// meter, the last reading and where the output is.
		out, errOut, code := b.bid("ada", "offer", "--json", "--gpus", "1", "--model", "A100", "--price", "0.50", "--time-limit", "2m",
			"--command", job, "--arg="+jobFlag, "--arg=exit", "--arg=7")
		require.Equal(t, 0, code, errOut)
		var r protocol.OfferReply
		require.NoError(t, json.Unmarshal([]byte(out), &r))
		require.NotNil(t, r.Contract)
		id := r.Contract.ID
		out, errOut, code = b.bid("ada", "wait", id)
		assert.Equal(t, 7, code, errOut)
		assert.Empty(t, errOut)
		assert.Regexp(t, `^`+id+` settled \(completed\), the job exited 7: charged \d+\.\d\d, refunded \d+\.\d\d CRED\n$`, out)

		out = b.ok("ada", "show", id)
		for _, want := range []string{"State        settled (completed)\n", "Exit status  7\n", "Meter        nvml\n", "Reading      #",
			", final: U ", "Output       stdout and stderr: bourse bid --nats " + b.m.URL() + " --id ada logs " + id,
			"Job          " + job + " " + jobFlag + " exit 7\n", "Server       gpu1\n"} {
			assert.Contains(t, out, want)
		}
	})
	rep, err := b.ledger.Audit(context.Background())
	require.NoError(t, err)
	assert.True(t, rep.OK(), "%s", rep)
}
