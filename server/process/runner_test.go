package process_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/server/process"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newRunner allows the test binary (as the helper) and /bin/sleep, its
// jobs measured by the full-use meter unless edit says otherwise.
func newRunner(t *testing.T, edit func(*process.Config)) (*process.Runner, string) {
	t.Helper()
	dir := t.TempDir()
	cfg := process.Config{
		Meter:     server.FullUse{},
		Allowed:   []string{os.Args[0], "/bin/sleep"},
		AllowEnv:  []string{helperEnv, "SEED", "SECRET"},
		Env:       map[string]string{"PATH": "/usr/bin:/bin"},
		OutputDir: dir,
		Grace:     5 * time.Second,
		Logger:    quiet(),
	}
	if edit != nil {
		edit(&cfg)
	}
	r, err := process.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(r.Close)
	return r, r.OutputDir()
}

func gpus(idx ...int) []contract.GPU {
	var out []contract.GPU
	for _, i := range idx {
		out = append(out, contract.GPU{Index: i, Model: "H100", MemoryMiB: 81559})
	}
	return out
}

func helperJob(act string, args ...string) *contract.JobSpec {
	return &contract.JobSpec{Command: os.Args[0], Args: args, Env: map[string]string{helperEnv: act}}
}

func start(t *testing.T, r *process.Runner, a server.Assignment) server.Job {
	t.Helper()
	if a.GPUs == nil {
		a.GPUs = gpus(0)
	}
	j, err := r.Start(context.Background(), a)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = j.Stop(context.Background(), contract.ReasonKilled) })
	return j
}

func waitDone(t *testing.T, j server.Job, within time.Duration) server.Measurement {
	t.Helper()
	select {
	case <-j.Done():
	case <-time.After(within):
		t.Fatalf("the job did not end within %s", within)
	}
	m, err := j.Measure()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func exitCode(t *testing.T, m server.Measurement) int {
	t.Helper()
	if m.ExitCode == nil {
		t.Fatal("no exit code")
	}
	return *m.ExitCode
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// firstLine waits for the job's first line of output.
func firstLine(t *testing.T, path string) string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if f, err := os.Open(path); err == nil {
			line, err := bufio.NewReader(f).ReadString('\n')
			_ = f.Close()
			if err == nil {
				return strings.TrimSpace(line)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no line in %s", path)
	return ""
}

// procState is the state letter of /proc/<pid>/stat ("" when gone; a
// zombie, Z, counts as gone).
func procState(pid int) string {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if f[0] == "Z" || f[0] == "X" {
		return ""
	}
	return f[0]
}

func waitState(t *testing.T, pid int, want func(string) bool, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if want(procState(pid)) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("process %d is %q, want %s", pid, procState(pid), what)
}

func TestNew(t *testing.T) {
	for _, tt := range []struct {
		name string
		cfg  process.Config
		ok   bool
	}{
		{"NoPrograms", process.Config{}, false},
		{"Missing", process.Config{Allowed: []string{"/no/such/program"}}, false},
		{"Shell", process.Config{Allowed: []string{"/bin/sh"}}, false},
		{"BashByName", process.Config{Allowed: []string{"bash"}}, false},
		{"ShellAllowed", process.Config{Allowed: []string{"/bin/sh"}, AllowShell: true}, true},
		{"BadEnv", process.Config{Allowed: []string{"/bin/sleep"}, Env: map[string]string{"A=B": "c"}}, false},
		{"SleepByName", process.Config{Allowed: []string{"sleep"}}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.OutputDir = t.TempDir()
			r, err := process.New(tt.cfg)
			if err == nil {
				r.Close()
			}
			if (err == nil) != tt.ok {
				t.Fatalf("New: %v, want ok=%v", err, tt.ok)
			}
			if err != nil && bourse.ErrorCode(err) != bourse.EInvalid {
				t.Errorf("code %s, want invalid", bourse.ErrorCode(err))
			}
		})
	}
}

func TestCheck(t *testing.T) {
	r, _ := newRunner(t, nil)
	for _, tt := range []struct {
		name string
		job  *contract.JobSpec
		code bourse.Code // "" for allowed
	}{
		{"NoJob", nil, bourse.EJobUnsupported},
		{"NoCommand", &contract.JobSpec{Profile: &contract.Profile{}}, bourse.EJobUnsupported},
		{"Disallowed", &contract.JobSpec{Command: "/bin/ls"}, bourse.EPermission},
		{"Shell", &contract.JobSpec{Command: "/bin/sh", Args: []string{"-c", "true"}}, bourse.EPermission},
		{"ByName", &contract.JobSpec{Command: "sleep"}, bourse.EPermission}, // allowed as a path only
		{"ByPath", &contract.JobSpec{Command: "/bin/sleep", Args: []string{"1"}}, ""},
		{"EnvAllowed", &contract.JobSpec{Command: "/bin/sleep", Env: map[string]string{"SEED": "1"}}, ""},
		{"EnvRefused", &contract.JobSpec{Command: "/bin/sleep", Env: map[string]string{"LD_PRELOAD": "/x.so"}}, bourse.EPermission},
		{"GPUsRefused", &contract.JobSpec{Command: "/bin/sleep", Env: map[string]string{"CUDA_VISIBLE_DEVICES": "0,1,2,3"}}, bourse.EPermission},
		{"CheckpointNone", &contract.JobSpec{Command: "/bin/sleep", Env: map[string]string{process.CheckpointEnv: "none"}}, ""},
		{"CheckpointBad", &contract.JobSpec{Command: "/bin/sleep", Env: map[string]string{process.CheckpointEnv: "maybe"}}, bourse.EInvalidOffer},
		{"NULArg", &contract.JobSpec{Command: "/bin/sleep", Args: []string{"1\x00"}}, bourse.EInvalidOffer},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := r.Check(tt.job)
			if got := codeOf(err); got != tt.code {
				t.Fatalf("Check = %v, want code %q", err, tt.code)
			}
			if tt.code != "" {
				// Start refuses what Check refuses, with the same code.
				_, err := r.Start(context.Background(), server.Assignment{Contract: "c-" + tt.name, Job: tt.job, GPUs: gpus(0)})
				if got := codeOf(err); got != tt.code {
					t.Errorf("Start = %v, want code %q", err, tt.code)
				}
			}
		})
	}
}

func codeOf(err error) bourse.Code {
	if err == nil {
		return ""
	}
	return bourse.ErrorCode(err)
}

func TestEnvironment(t *testing.T) {
	t.Setenv("SECRET", "the server's own") // not passed to jobs
	r, dir := newRunner(t, func(c *process.Config) {
		c.Devices = map[int]string{3: "GPU-3f1c"}
	})
	job := helperJob("env")
	job.Env["SEED"] = "42"
	j := start(t, r, server.Assignment{Contract: "c1", Job: job, GPUs: gpus(1, 3)})
	m := waitDone(t, j, 10*time.Second)
	if c := exitCode(t, m); c != 0 {
		t.Fatalf("exit status %d", c)
	}
	got := readFile(t, filepath.Join(dir, "c1", "stdout"))
	for _, want := range []string{
		"CUDA_VISIBLE_DEVICES=1,GPU-3f1c true",
		"NVIDIA_VISIBLE_DEVICES=1,GPU-3f1c true",
		"BOURSE_CONTRACT=c1 true",
		"SEED=42 true",
		"SECRET= false",
		"PATH=/usr/bin:/bin true",
	} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("the job's environment lacks %q:\n%s", want, got)
		}
	}
	if full := decimal.NewFromInt(2).Mul(decimal.New(int64(m.T), -9)); !m.S.Equal(decimal.NewFromInt(2)) || !m.U.Equal(full) || m.T <= 0 {
		t.Errorf("measurement %+v; want S = 2, T > 0 and U = S·T = %s by the full-use meter", m, full)
	}
}

func TestExitStatus(t *testing.T) {
	r, _ := newRunner(t, nil)
	j := start(t, r, server.Assignment{Contract: "c1", Job: helperJob("exit", "3")})
	if c := exitCode(t, waitDone(t, j, 10*time.Second)); c != 3 {
		t.Errorf("exit status %d, want 3", c)
	}
	// Stopping an ended job does nothing.
	if err := j.Stop(context.Background(), contract.ReasonKilled); err != nil {
		t.Errorf("Stop after the end: %v", err)
	}
}

func TestKill(t *testing.T) {
	t.Run("Polite", func(t *testing.T) {
		r, _ := newRunner(t, nil)
		j := start(t, r, server.Assignment{Contract: "c1", Job: &contract.JobSpec{Command: "/bin/sleep", Args: []string{"60"}}})
		t0 := time.Now()
		if err := j.Stop(context.Background(), contract.ReasonKilled); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(t0); d > 2*time.Second {
			t.Errorf("Stop took %s; sleep dies of SIGTERM at once", d)
		}
		if c := exitCode(t, waitDone(t, j, time.Second)); c != 128+int(syscall.SIGTERM) {
			t.Errorf("exit status %d, want %d (SIGTERM)", c, 128+int(syscall.SIGTERM))
		}
	})
	t.Run("IgnoresSIGTERM", func(t *testing.T) {
		const grace = 300 * time.Millisecond
		r, dir := newRunner(t, func(c *process.Config) { c.Grace = grace })
		j := start(t, r, server.Assignment{Contract: "c1", Job: helperJob("stubborn")})
		child, err := strconv.Atoi(firstLine(t, filepath.Join(dir, "c1", "stdout")))
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		if err := j.Stop(context.Background(), contract.ReasonKilled); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(t0); d < grace || d > grace+3*time.Second {
			t.Errorf("Stop took %s; want the grace period %s, then SIGKILL", d, grace)
		}
		if c := exitCode(t, waitDone(t, j, time.Second)); c != 128+int(syscall.SIGKILL) {
			t.Errorf("exit status %d, want %d (SIGKILL)", c, 128+int(syscall.SIGKILL))
		}
		// The child in the job's group went too.
		waitState(t, child, func(s string) bool { return s == "" }, "gone")
	})
	t.Run("ContextCutsGrace", func(t *testing.T) {
		r, dir := newRunner(t, func(c *process.Config) { c.Grace = time.Minute })
		j := start(t, r, server.Assignment{Contract: "c1", Job: helperJob("stubborn")})
		firstLine(t, filepath.Join(dir, "c1", "stdout"))
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		t0 := time.Now()
		_ = j.Stop(ctx, contract.ReasonKilled)
		if d := time.Since(t0); d < 200*time.Millisecond || d > 5*time.Second {
			t.Errorf("Stop took %s; want the context's 200ms", d)
		}
	})
}

func TestSuspend(t *testing.T) {
	t.Run("Checkpoint", func(t *testing.T) {
		r, dir := newRunner(t, nil)
		j := start(t, r, server.Assignment{Contract: "c1", Job: helperJob("checkpoint")})
		if got := firstLine(t, filepath.Join(dir, "c1", "stdout")); got != "ready" {
			t.Fatalf("first line %q", got)
		}
		if err := j.Stop(context.Background(), contract.ReasonSuspended); err != nil {
			t.Fatal(err)
		}
		if c := exitCode(t, waitDone(t, j, time.Second)); c != 0 {
			t.Errorf("exit status %d; the job checkpoints and exits 0", c)
		}
		if got := readFile(t, filepath.Join(dir, "c1", "stdout")); got != "ready\ncheckpointed\n" {
			t.Errorf("output %q", got)
		}
	})
	t.Run("FreezeAndResume", func(t *testing.T) {
		r, dir := newRunner(t, nil)
		job := helperJob("count")
		job.Env[process.CheckpointEnv] = "none"
		j := start(t, r, server.Assignment{Contract: "c1", Job: job, GPUs: gpus(0, 1)})
		out := filepath.Join(dir, "c1", "stdout")
		firstLine(t, out)
		pid := jobPID(t, r, j)
		if err := j.Stop(context.Background(), contract.ReasonSuspended); err != nil {
			t.Fatal(err)
		}
		m := waitDone(t, j, time.Second)
		if m.ExitCode != nil {
			t.Errorf("a frozen job has no exit status, got %d", *m.ExitCode)
		}
		waitState(t, pid, func(s string) bool { return s == "T" }, "stopped (T)")
		// What the job wrote just before it stopped may still be on its
		// way from the pipe to the file: wait for the copy to settle.
		frozen := len(readFile(t, out))
		for settle := time.Now().Add(time.Second); time.Now().Before(settle); {
			time.Sleep(50 * time.Millisecond)
			n := len(readFile(t, out))
			if n == frozen {
				break
			}
			frozen = n
		}
		time.Sleep(100 * time.Millisecond)
		if n := len(readFile(t, out)); n != frozen {
			t.Errorf("a frozen job wrote %d bytes", n-frozen)
		}
		// T stopped with the job.
		if m2, _ := j.Measure(); m2.T != m.T {
			t.Errorf("T moved after the end: %s then %s", m.T, m2.T)
		}

		j2 := start(t, r, server.Assignment{Contract: "c2", Job: job, GPUs: gpus(0, 1), Resumes: "c1"})
		if got := jobPID(t, r, j2); got != pid {
			t.Fatalf("the resume started pid %d; want the frozen %d thawed", got, pid)
		}
		waitState(t, pid, func(s string) bool { return s != "T" && s != "" }, "running")
		deadline := time.Now().Add(5 * time.Second)
		for len(readFile(t, out)) == frozen && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if len(readFile(t, out)) == frozen {
			t.Error("the thawed job writes nothing")
		}
		// Its output goes on in c1's folder; c2's says so, and is whole.
		if got := readFile(t, filepath.Join(dir, "c2", "exit")); got != "resumed: output in c1\n" {
			t.Errorf("c2's exit %q", got)
		}
		if err := j2.Stop(context.Background(), contract.ReasonKilled); err != nil {
			t.Fatal(err)
		}
		waitDone(t, j2, time.Second)
		waitState(t, pid, func(s string) bool { return s == "" }, "gone")
	})
	t.Run("FrozenNotResumed", func(t *testing.T) {
		r, dir := newRunner(t, func(c *process.Config) { c.StoppedTTL = 200 * time.Millisecond })
		job := helperJob("count")
		job.Env[process.CheckpointEnv] = "none"
		j := start(t, r, server.Assignment{Contract: "c1", Job: job})
		firstLine(t, filepath.Join(dir, "c1", "stdout"))
		pid := jobPID(t, r, j)
		_ = j.Stop(context.Background(), contract.ReasonSuspended)
		// Another GPU: the resume starts afresh, and the frozen job dies in time.
		j2 := start(t, r, server.Assignment{Contract: "c2", Job: job, GPUs: gpus(5), Resumes: "c1"})
		if jobPID(t, r, j2) == pid {
			t.Error("a resume on other GPUs thawed the frozen job")
		}
		checkEnded(t, dir, "c1", pid, "not resumed within 200ms")
	})
}

// jobPID finds the job's leader through the meter's owns callback.
func jobPID(t *testing.T, _ *process.Runner, j server.Job) int {
	t.Helper()
	pj, ok := j.(interface{ PID() int })
	if !ok {
		t.Fatal("the job does not say its pid")
	}
	return pj.PID()
}

func TestTimeLimit(t *testing.T) {
	r, _ := newRunner(t, nil)
	j := start(t, r, server.Assignment{Contract: "c1", TimeLimit: 200 * time.Millisecond,
		Job: &contract.JobSpec{Command: "/bin/sleep", Args: []string{"60"}}})
	m := waitDone(t, j, 5*time.Second)
	if m.T < 200*time.Millisecond || m.T > 3*time.Second {
		t.Errorf("T = %s; want about the time limit", m.T)
	}
	if c := exitCode(t, m); c != 128+int(syscall.SIGTERM) {
		t.Errorf("exit status %d, want SIGTERM's", c)
	}
}

func TestOutputCap(t *testing.T) {
	r, dir := newRunner(t, func(c *process.Config) { c.OutputCap = 1000 })
	j := start(t, r, server.Assignment{Contract: "c1", Job: helperJob("spew", strconv.Itoa(1<<20))})
	if c := exitCode(t, waitDone(t, j, 10*time.Second)); c != 0 {
		t.Fatalf("exit status %d; a job over its cap must not block", c)
	}
	if got := len(readFile(t, filepath.Join(dir, "c1", "stdout"))); got != 1000 {
		t.Errorf("stdout holds %d bytes, want the cap, 1000", got)
	}
}

// fakeMeter reports a fixed use per second and records what it was asked.
type fakeMeter struct {
	mu      sync.Mutex
	perSec  decimal.Decimal
	owns    func(int) bool
	stopped bool
	started time.Time
	failed  bool
}

func (f *fakeMeter) Kind() contract.Meter { return "fake" }

func (f *fakeMeter) Track(_ []contract.GPU, owns func(int) bool) (server.Gauge, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failed {
		return nil, errors.New("no meter today")
	}
	f.owns, f.started = owns, time.Now()
	return f, nil
}

func (f *fakeMeter) Read() (decimal.Decimal, decimal.Decimal) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := decimal.NewFromFloat(time.Since(f.started).Seconds())
	return f.perSec.Mul(s), decimal.NewFromInt(7)
}

func (f *fakeMeter) Stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopped = true
}

func TestMeter(t *testing.T) {
	// A meter that overshoots is capped at S·T.
	meter := &fakeMeter{perSec: decimal.NewFromInt(5)}
	r, dir := newRunner(t, func(c *process.Config) { c.Meter, c.Grace = meter, 100*time.Millisecond })
	j := start(t, r, server.Assignment{Contract: "c1", Job: helperJob("stubborn"), GPUs: gpus(0, 1)})
	child, err := strconv.Atoi(firstLine(t, filepath.Join(dir, "c1", "stdout")))
	if err != nil {
		t.Fatal(err)
	}
	meter.mu.Lock()
	owns := meter.owns
	meter.mu.Unlock()
	if !owns(jobPID(t, r, j)) || !owns(child) {
		t.Error("owns refuses the job's processes")
	}
	if owns(os.Getpid()) || owns(1) {
		t.Error("owns claims processes outside the job")
	}
	time.Sleep(50 * time.Millisecond)
	m, _ := j.Measure()
	if max := decimal.NewFromInt(2).Mul(decimal.New(int64(m.T), -9)); !m.U.Equal(max) {
		t.Errorf("U = %s, want it capped at S·T = %s", m.U, max)
	}
	if !m.EnergyJ.Equal(decimal.NewFromInt(7)) {
		t.Errorf("energy %s, want the meter's 7", m.EnergyJ)
	}
	_ = j.Stop(context.Background(), contract.ReasonKilled)
	meter.mu.Lock()
	stopped := meter.stopped
	meter.mu.Unlock()
	if !stopped {
		t.Error("the gauge was not stopped with the job")
	}

	t.Run("MeterFails", func(t *testing.T) {
		r, _ := newRunner(t, func(c *process.Config) { c.Meter = &fakeMeter{failed: true} })
		_, err := r.Start(context.Background(), server.Assignment{Contract: "c2", Job: helperJob("sleep"), GPUs: gpus(0)})
		if err == nil {
			t.Fatal("Start ran a job it could not meter")
		}
	})
}
