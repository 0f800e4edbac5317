//go:build gpu

package nvmlmeter_test

import (
	"cmp"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/server/nvmlmeter"
	"github.com/bourse/bourse/server/process"
	"github.com/bourse/bourse/server/process/usertest"
)

// loadSeconds is how long the load keeps GPU 0 busy.
const loadSeconds = 10

// torchLoad keeps one GPU busy with matrix products for loadSeconds.
var torchLoad = torchLoadFor(loadSeconds)

// torchLoadFor keeps one GPU busy with matrix products for s seconds.
func torchLoadFor(s int) string {
	return `
import time, torch
a = torch.randn(8192, 8192, device="cuda")
end = time.time() + ` + strconv.Itoa(s) + `
while time.time() < end:
    b = a @ a
    torch.cuda.synchronize()
`
}

// TestRealLoad runs a known load on GPU 0 through the process runner and
// the real meter, and logs the measured U against the expected: the load's
// run time on one GPU. Run it on a machine with a GPU:
//
//	go test -tags gpu -run RealLoad -v ./server/nvmlmeter/
//
// BOURSE_GPU_LOAD names another program to run as the load (it gets no
// arguments and should keep the GPU busy for 10 s); the default needs
// python3 with torch.
func TestRealLoad(t *testing.T) {
	m, err := nvmlmeter.Open(nvml.New(), nvmlmeter.Config{Interval: time.Second})
	if err != nil {
		t.Skipf("no NVML: %v", err)
	}
	defer m.Close()
	t.Logf("GPUs: %+v", m.GPUs())
	for _, device := range []bool{false, true} {
		name := "PerProcess"
		if device {
			name = "Device"
		}
		t.Run(name, func(t *testing.T) { runLoad(t, device) })
	}
}

func runLoad(t *testing.T, device bool) {
	m, err := nvmlmeter.Open(nvml.New(), nvmlmeter.Config{Interval: time.Second, Device: device})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	job := &contract.JobSpec{Command: "python3", Args: []string{"-c", torchLoad}}
	allowed := []string{"python3"}
	if p := os.Getenv("BOURSE_GPU_LOAD"); p != "" {
		job, allowed = &contract.JobSpec{Command: p}, []string{p}
	}
	r, err := process.New(process.Config{Allowed: allowed, Meter: m, Devices: m.Devices(), OutputDir: t.TempDir(),
		Env: map[string]string{"PATH": os.Getenv("PATH"), "HOME": os.Getenv("HOME")}})
	if err != nil {
		t.Skipf("no load to run: %v", err)
	}
	gpu := m.GPUs()[:1]
	j, err := r.Start(context.Background(), server.Assignment{Contract: "gpu-test", Job: job, GPUs: gpu, TimeLimit: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-j.Done():
	case <-time.After(2 * time.Minute):
		_ = j.Stop(context.Background(), contract.ReasonKilled)
		t.Fatal("the load did not end")
	}
	meas, _ := j.Measure()
	if meas.ExitCode == nil || *meas.ExitCode != 0 {
		t.Skipf("the load failed (exit %v): no torch or CUDA here?", meas.ExitCode)
	}
	t.Logf("device=%v: measured U = %s GPU-s over T = %s (S = %s, energy %s J); expected U ≈ %d GPU-s of load (plus start-up, which is not busy)",
		device, meas.U, meas.T, meas.S, meas.EnergyJ, loadSeconds)
	if meas.U.IsZero() {
		t.Error("a busy GPU measured U = 0")
	}
}

// setsidParent starts a load (argv[2]) in a child that leaves the job's
// session and process group (Python's start_new_session: setsid), prints
// the child's pid, then waits for it (argv[1] = "wait") or exits after 8 s
// ("exit"), leaving it on the GPU.
var setsidParent = `
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", sys.argv[2]], start_new_session=True)
print(child.pid, flush=True)
if sys.argv[1] == "wait":
    sys.exit(child.wait())
time.sleep(8)
`

// TestSetsidLoad runs a load on GPU 0 in a child that called setsid, under
// the process runner and the real meter: U counts the child's work (10 s
// of it where the parent waits), and when the parent exits first (after
// 8 s, the child's load being 20 s) the job ends only once the child is
// gone, nothing of it left on the GPU. Run it on a machine with a GPU, as
// root:
//
//	go test -tags gpu -count=1 -run SetsidLoad -v ./server/nvmlmeter/
//
// It needs the NVIDIA driver, python3 with torch (BOURSE_GPU_PYTHON names
// another interpreter: an absolute path) that the job's user can run and
// import, and a way to know the job's processes: as root the test makes a
// job user (useradd) and a cgroup where /sys/fs/cgroup is writable;
// BOURSE_GPU_JOB_USERS=off leaves the user out (where torch is installed
// for root alone), and then the cgroup is required.
func TestSetsidLoad(t *testing.T) {
	lib := nvml.New()
	m, err := nvmlmeter.Open(lib, nvmlmeter.Config{Interval: time.Second})
	if err != nil {
		t.Skipf("no NVML: %v", err)
	}
	defer m.Close()
	python, err := exec.LookPath(cmp.Or(os.Getenv("BOURSE_GPU_PYTHON"), "python3"))
	if err != nil {
		t.Skipf("no python3: %v", err)
	}
	if out, err := exec.Command(python, "-c", "import torch; assert torch.cuda.is_available()").CombinedOutput(); err != nil {
		t.Skipf("no torch with CUDA for %s: %v: %s", python, err, out)
	}
	cfg := process.Config{Allowed: []string{python}, Meter: m, Devices: m.Devices(), Cgroup: process.CgroupRequired,
		Env: map[string]string{"PATH": os.Getenv("PATH")}, OutputDir: t.TempDir()}
	if os.Geteuid() == 0 && os.Getenv("BOURSE_GPU_JOB_USERS") != "off" {
		cfg.Users = usertest.Create(t, 1)
		cfg.Cgroup = process.CgroupAuto
		cfg.OutputDir = filepath.Join(usertest.Dir(t), "jobs")
	}
	r, err := process.New(cfg)
	switch {
	case err != nil && os.Geteuid() != 0:
		t.Skipf("no way to know a job's processes here (run it as root): %v", err)
	case err != nil:
		t.Fatal(err)
	}
	defer r.Close()
	t.Logf("jobs kept apart by %s", r.Isolation())
	for _, parent := range []string{"wait", "exit"} {
		t.Run(parent, func(t *testing.T) {
			id := "setsid-" + parent
			load, want := torchLoad, decimal.NewFromInt(loadSeconds/2) // start-up is not busy
			if parent == "exit" {
				// Killed with its parent, about 8 s in, start-up included.
				load, want = torchLoadFor(2*loadSeconds), decimal.NewFromInt(2)
			}
			job := &contract.JobSpec{Command: python, Args: []string{"-c", setsidParent, parent, load}}
			j, err := r.Start(context.Background(), server.Assignment{Contract: id, Job: job, GPUs: m.GPUs()[:1], TimeLimit: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = j.Stop(context.Background(), contract.ReasonKilled) }()
			select {
			case <-j.Done():
			case <-time.After(2 * time.Minute):
				t.Fatal("the load did not end")
			}
			stdout, _ := os.ReadFile(filepath.Join(r.OutputDir(), id, "stdout"))
			stderr, _ := os.ReadFile(filepath.Join(r.OutputDir(), id, "stderr"))
			child, err := strconv.Atoi(strings.TrimSpace(string(stdout)))
			if err != nil {
				t.Fatalf("the job printed %q (stderr %q)", stdout, stderr)
			}
			if _, err := os.Stat("/proc/" + strconv.Itoa(child)); err == nil && !zombie(child) {
				t.Errorf("the job ended, its GPU free for the next contract, with its setsid child %d alive", child)
			}
			meas, _ := j.Measure()
			code := "none"
			if meas.ExitCode != nil {
				code = strconv.Itoa(*meas.ExitCode)
			}
			t.Logf("parent %s: U = %s GPU-s over T = %s, exit %s (stderr %q)", parent, meas.U, meas.T, code, stderr)
			if meas.U.LessThan(want) {
				t.Errorf("U = %s GPU-s; want at least %s: the setsid child's GPU work is the job's", meas.U, want)
			}
			if parent == "wait" && (meas.ExitCode == nil || *meas.ExitCode != 0) {
				t.Errorf("the load failed: exit %v, stderr %q", meas.ExitCode, stderr)
			}
			h, ret := lib.DeviceGetHandleByIndex(0)
			if ret == nvml.SUCCESS {
				procs, _ := h.GetComputeRunningProcesses()
				for _, p := range procs {
					if int(p.Pid) == child {
						t.Errorf("the setsid child %d still holds %d MiB of GPU 0 after its job ended", child, p.UsedGpuMemory>>20)
					}
				}
			}
		})
	}
}

// zombie reports whether pid has exited and waits only to be reaped.
func zombie(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && (f[0] == "Z" || f[0] == "X")
}
