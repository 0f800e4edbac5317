//go:build gpu

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/scenario"
)

// dutyJob keeps GPU 0 busy a known fraction of each second with bf16
// matrix products, and times its own kernels with CUDA events: the
// truth the meter is held to. It writes the kernel time so far to
// $BOURSE_RESULTS/kernel.json after every batch, and on SIGTERM (a kill,
// a suspend that checkpoints) once more before it exits.
const dutyJob = `
import json, os, signal, sys, time
import torch

seconds, duty = float(sys.argv[1]), float(sys.argv[2])
out = os.path.join(os.environ.get("BOURSE_RESULTS", "."), "kernel.json")
kernel_ms = 0.0
def save():
    with open(out + ".tmp", "w") as f:
        json.dump({"kernel_seconds": kernel_ms / 1000.0}, f)
    os.replace(out + ".tmp", out)
def stop(*_):
    save()
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)

a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
start = time.time()
# Periods of a second are counted, not the wall clock: a job frozen and
# thawed goes on with the periods it had left.
for i in range(int(seconds)):
    period = time.time()
    while duty > 0 and time.time() < period + duty:
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(8):
            b = a @ a
        e.record()
        e.synchronize()
        kernel_ms += s.elapsed_time(e)
        save()
    rest = period + 1 - time.time()
    if rest > 0:
        time.sleep(rest)
    print("period %d: kernel %.3f s" % (i + 1, kernel_ms / 1000.0), flush=True)
save()
`

// TestGPUMarket is the NVML meter proved in a whole market on a real GPU:
// the real `bourse server` (nvml: required, the process runner) sells
// GPU 0, ada buys jobs of known duty cycle through `bourse bid`, and each
// contract must settle on a U within 5% of the kernel time the job
// measured itself, charged exactly the price of its reading, its results
// returned. A job frozen by a suspend (BOURSE_CHECKPOINT=none) gains no
// U while frozen, and its resume goes on where it stopped. Run it on a
// machine with an NVIDIA GPU and python3 with torch (make gpu-meter):
//
//	go test -tags gpu -count=1 -run GPUMarket -v ./cmd/bourse/
func TestGPUMarket(t *testing.T) {
	lib := nvml.New()
	if ret := lib.Init(); ret != nvml.SUCCESS {
		t.Skipf("no NVML: %v", lib.ErrorString(ret))
	}
	_ = lib.Shutdown()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	if out, err := exec.Command(python, "-c", "import torch; assert torch.cuda.is_available(); print(torch.cuda.get_device_name(0))").CombinedOutput(); err != nil {
		t.Skipf("no torch with CUDA: %v\n%s", err, out)
	} else {
		t.Logf("GPU 0: %s", strings.TrimSpace(string(out)))
	}
	script := filepath.Join(t.TempDir(), "duty.py")
	require.NoError(t, os.WriteFile(script, []byte(dutyJob), 0o644))

	b := startBidMarket(t, []scenario.ServerSpec{}...)
	srv := startServer(t, nvml.New, "id: gpu1\nnvml: required\noutbox_dir: "+t.TempDir()+`
nats: {url: `+b.m.URL()+`}
currency: {code: CRED, scale: 2}
policy: {kind: reserve}
runner: {kind: process, allowed: [`+python+`], output_dir: `+t.TempDir()+`, grace: 5s}
`)
	require.Eventually(t, func() bool { return strings.Contains(srv.String(), "msg=registered") }, 30*time.Second, 100*time.Millisecond,
		"the server did not register:\n%s", srv)
	t.Logf("server: %s", firstLines(srv.String(), "meter:", "policy:"))

	// offer buys one GPU of gpu1 for the duty job at 0.50 a GPU-second,
	// for a time limit of 2 minutes: a prepayment of 60.
	offer := func(t *testing.T, seconds, duty string, env map[string]string) protocol.ContractView {
		t.Helper()
		terms := map[string]any{"client": "ada", "currency": "CRED", "gpus": 1, "server": "gpu1", "time_limit": "2m", "prepayment": "60",
			"p": [][]string{{"0", "0.50"}}, "job": map[string]any{"command": python, "args": []string{script, seconds, duty}}}
		if env != nil {
			terms["job"].(map[string]any)["env"] = env
		}
		body, _ := json.Marshal(terms)
		file := filepath.Join(t.TempDir(), "terms.json")
		require.NoError(t, os.WriteFile(file, body, 0o600))
		out, errOut, code := b.bid("ada", "--json", "offer", "-f", file)
		require.Equal(t, 0, code, errOut)
		var r protocol.OfferReply
		require.NoError(t, json.Unmarshal([]byte(out), &r))
		require.NotNil(t, r.Contract, "no contract: %s", out)
		return *r.Contract
	}
	settled := func(t *testing.T, id string, within time.Duration) protocol.ContractView {
		t.Helper()
		deadline := time.Now().Add(within)
		for {
			k := contractOf(t, b, id)
			if k.State == contract.StateSettled {
				return k
			}
			require.True(t, time.Now().Before(deadline), "%s is still %s after %v", id, k.State, within)
			time.Sleep(200 * time.Millisecond)
		}
	}
	kernelOf := func(t *testing.T, id string) float64 {
		t.Helper()
		dir := filepath.Join(t.TempDir(), "results")
		okBid(t, b, "results", "--wait", id, "-o", dir)
		data, err := os.ReadFile(filepath.Join(dir, "kernel.json"))
		require.NoError(t, err, "the job's results came back")
		var k struct {
			KernelSeconds float64 `json:"kernel_seconds"`
		}
		require.NoError(t, json.Unmarshal(data, &k))
		return k.KernelSeconds
	}
	exact := func(t *testing.T, k protocol.ContractView) {
		t.Helper()
		require.NotNil(t, k.Reading, "settled on a reading")
		assert.Equal(t, contract.MeterNVML, k.Meter)
		st, err := contract.Charge(k.Terms, k.Reading.Usage(), 2)
		require.NoError(t, err)
		assert.True(t, k.Charge.Equal(st.Charge), "charged %s, the price of its reading is %s", k.Charge, st.Charge)
		assert.True(t, k.Charge.Add(k.Refund).Equal(k.Terms.Prepayment), "charge + refund = prepayment")
	}
	within := func(t *testing.T, u decimal.Decimal, kernel float64, tolerance float64) {
		t.Helper()
		uf := u.InexactFloat64()
		if kernel < 0.5 {
			assert.Less(t, uf, 0.5, "U %.2f GPU-s for a job that ran no kernels", uf)
			return
		}
		assert.InDelta(t, kernel, uf, kernel*tolerance, "U %.2f GPU-s against the job's own kernel time %.2f s", uf, kernel)
	}
	report := func(t *testing.T, name string, k protocol.ContractView, kernel float64) {
		t.Logf("| %s | %s | %.2f | %.2f | %s | %s |", name, k.Reading.U.StringFixed(2), kernel,
			float64(k.Reading.T)/1e9, k.Charge.StringFixed(2), k.Refund.StringFixed(2))
	}
	t.Log("| job | U metered (GPU-s) | the job's own kernel time (s) | T (s) | charged at 0.50 | refunded |")

	for _, c := range []struct{ name, seconds, duty string }{
		{"BusyAllTheTime", "20", "1"},
		{"BusyHalfOfEachSecond", "20", "0.5"},
		{"Idle", "12", "0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := offer(t, c.seconds, c.duty, nil)
			got := settled(t, k.ID, 90*time.Second)
			assert.Equal(t, contract.ReasonCompleted, got.Reason)
			exact(t, got)
			kernel := kernelOf(t, k.ID)
			report(t, c.name, got, kernel)
			within(t, got.Reading.U, kernel, 0.05)
		})
	}

	t.Run("Killed", func(t *testing.T) {
		k := offer(t, "60", "1", nil)
		time.Sleep(12 * time.Second)
		okBid(t, b, "kill", k.ID)
		got := settled(t, k.ID, 30*time.Second)
		assert.Equal(t, contract.ReasonKilled, got.Reason)
		exact(t, got)
		kernel := kernelOf(t, k.ID)
		report(t, "killed after 12 s", got, kernel)
		within(t, got.Reading.U, kernel, 0.05)
	})

	t.Run("SuspendedFrozenResumed", func(t *testing.T) {
		k := offer(t, "45", "1", map[string]string{"BOURSE_CHECKPOINT": "none"})
		time.Sleep(15 * time.Second)
		okBid(t, b, "suspend", k.ID)
		susp := settled(t, k.ID, 30*time.Second)
		assert.Equal(t, contract.ReasonSuspended, susp.Reason)
		exact(t, susp)
		time.Sleep(10 * time.Second) // frozen: no contract runs, nothing is metered

		var r protocol.OfferReply
		require.NoError(t, json.Unmarshal([]byte(okBid(t, b, "--json", "resume", k.ID)), &r))
		require.NotNil(t, r.Contract, "the resume made a contract: %+v", r)
		res := settled(t, r.Contract.ID, 90*time.Second)
		assert.Equal(t, contract.ReasonCompleted, res.Reason)
		exact(t, res)
		total := kernelOf(t, k.ID) // its output goes on in the suspended contract's folder
		report(t, "suspended after 15 s (kernel time: both contracts)", susp, total)
		report(t, "resumed after 10 s frozen", res, total)
		// A job started afresh would run its 45 periods again; one thawed
		// runs the periods it had left.
		rt := float64(res.Reading.T) / 1e9
		assert.Less(t, rt, 40.0, "the resumed contract ran %.1f s: it went on where it stopped", rt)
		within(t, susp.Reading.U.Add(res.Reading.U), total, 0.05)
	})

	rep, err := b.ledger.Audit(t.Context())
	require.NoError(t, err)
	assert.True(t, rep.OK(), "%s", rep)
}

// firstLines is the lines of s that start with one of prefixes.
func firstLines(s string, prefixes ...string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		for _, p := range prefixes {
			if strings.HasPrefix(l, p) {
				out = append(out, l)
			}
		}
	}
	return strings.Join(out, "; ")
}

// okBid runs ada's bourse bid args and fails t unless it exits 0.
func okBid(t *testing.T, b *bidMarket, args ...string) string {
	t.Helper()
	out, errOut, code := b.bid("ada", args...)
	require.Equal(t, 0, code, "bourse bid %s: %s", strings.Join(args, " "), errOut)
	return out
}

// contractOf is ada's contract id as the exchange has it now.
func contractOf(t *testing.T, b *bidMarket, id string) protocol.ContractView {
	t.Helper()
	var cs []protocol.ContractView
	require.NoError(t, json.Unmarshal([]byte(okBid(t, b, "--json", "contracts")), &cs))
	for _, k := range cs {
		if k.ID == id {
			return k
		}
	}
	t.Fatalf("ada has no contract %s", id)
	return protocol.ContractView{}
}
