//go:build gpu

package nvmlmeter_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/bourse/bourse/pricing"
	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/server/nvmlmeter"
	"github.com/bourse/bourse/server/process"
	"github.com/bourse/bourse/trade"
)

// loadSeconds is how long the load keeps GPU 0 busy.
const loadSeconds = 10

// torchLoad keeps one GPU busy with matrix products for loadSeconds.
var torchLoad = `
import time, torch
a = torch.randn(8192, 8192, device="cuda")
end = time.time() + ` + strconv.Itoa(loadSeconds) + `
while time.time() < end:
    b = a @ a
    torch.cuda.synchronize()
`

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
	job := &pricing.JobSpec{Command: "python3", Args: []string{"-c", torchLoad}}
	allowed := []string{"python3"}
	if p := os.Getenv("BOURSE_GPU_LOAD"); p != "" {
		job, allowed = &pricing.JobSpec{Command: p}, []string{p}
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
		_ = j.Stop(context.Background(), trade.ReasonKilled)
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
