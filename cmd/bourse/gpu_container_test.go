//go:build gpu

package main

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/scenario"
	"github.com/bourse/bourse/server/container/containertest"
	"github.com/bourse/bourse/server/process/usertest"
)

// TestGPUContainer is issue 39's job on a real GPU: a client's own image,
// with no CUDA of its own, run by the container runner on GPU 0 with
// the driver's libraries the runner mounts from the host, metered by
// NVML within 5% of the kernel time the job measured itself (its CUDA
// events), as the process runner's jobs are in TestGPUMarket. The job is
// testdata/gpuduty/duty.c, built with the loader and C library it links
// into a root laid over busybox (scripts/gpu-duty-root.sh; make
// gpu-tests builds it into bin/gpu/duty-root for a machine without a C
// compiler). Run it as root on a machine with an NVIDIA GPU and runc:
//
//	go test -tags gpu -count=1 -run GPUContainer -v ./cmd/bourse/
func TestGPUContainer(t *testing.T) {
	lib := nvml.New()
	if ret := lib.Init(); ret != nvml.SUCCESS {
		t.Skipf("no NVML: %v", lib.ErrorString(ret))
	}
	_ = lib.Shutdown()
	containertest.Need(t)
	users := usertest.Create(t, 2)

	root := containertest.Root(t)
	copyTree(t, dutyRoot(t), root)
	host := containertest.Registry(t)
	ref := host + "/test/duty:1"
	digest := containertest.Push(t, root, ref, v1.Config{Env: []string{"PATH=/bin"}, Entrypoint: []string{"/bin/duty"}, Cmd: []string{"10", "1"}})

	b := startBidMarket(t, []scenario.ServerSpec{}...)
	base := usertest.Dir(t)
	srv := startServerOn(t, nvml.New, openImages, `
id: gpu1
nvml: required
outbox_dir: `+filepath.Join(base, "outbox")+`
nats: {url: `+b.m.URL()+`}
currency: {code: CRED, scale: 2}
policy: {kind: reserve}
runner:
  kind: container
  job_users: [`+strings.Join(users, ", ")+`]
  output_dir: `+filepath.Join(base, "jobs")+`
  state_dir: `+filepath.Join(base, "state")+`
  grace: 5s
  memory_per_gpu: 17179869184
  images: {allowed: [`+host+`/test], insecure: [`+host+`], cache_dir: `+filepath.Join(base, "images")+`}
`)
	require.Eventually(t, func() bool { return strings.Contains(srv.String(), "msg=registered") }, 30*time.Second, 100*time.Millisecond,
		"the server did not register:\n%s", srv)
	t.Logf("server: %s", firstLines(srv.String(), "meter:", "jobs:", "gpus:"))

	// run buys GPU 0 for the image's duty job at 0.50 a GPU-second, for a
	// time limit of 2 minutes.
	run := func(t *testing.T, seconds, duty string) string {
		t.Helper()
		k := b.offerJSON("ada", "--server", "gpu1", "--gpus", "1", "--price", "0.50", "--time-limit", "2m", "--image", ref,
			"--arg", seconds, "--arg", duty)
		return k.ID
	}
	kernel := func(t *testing.T, id string) float64 {
		t.Helper()
		dir := filepath.Join(t.TempDir(), "results")
		b.ok("ada", "results", "--wait", id, "-o", dir)
		return kernelSeconds(t, filepath.Join(dir, "kernel.json"))
	}
	check := func(t *testing.T, name, id string, reason contract.Reason) {
		t.Helper()
		got := b.waitState("ada", id, contract.StateSettled)
		assert.Equal(t, reason, got.Reason)
		assert.Equal(t, digest, got.Image, "the contract names the image by its digest")
		assert.Equal(t, contract.MeterNVML, got.Meter)
		require.NotNil(t, got.Reading, "settled on a reading")
		st, err := contract.Charge(got.Terms, got.Reading.Usage(), 2)
		require.NoError(t, err)
		assert.True(t, got.Charge.Equal(st.Charge), "charged %s, the price of its reading is %s", got.Charge, st.Charge)
		k := kernel(t, id)
		u := got.Reading.U.InexactFloat64()
		t.Logf("| %s (container) | %.2f | %.2f | %.2f | %s | %s |", name, u, k, float64(got.Reading.T)/1e9, got.Charge.StringFixed(2), got.Refund.StringFixed(2))
		if k < 0.5 {
			assert.Less(t, u, 0.5, "U %.2f GPU-s for a job that ran no kernels", u)
			return
		}
		assert.InDelta(t, k, u, k*0.05, "U %.2f GPU-s against the job's own kernel time %.2f s", u, k)
	}
	t.Log("| job | U metered (GPU-s) | the job's own kernel time (s) | T (s) | charged at 0.50 | refunded |")

	t.Run("BusyAllTheTime", func(t *testing.T) { check(t, "busy all the time", run(t, "20", "1"), contract.ReasonCompleted) })
	t.Run("BusyHalfOfEachSecond", func(t *testing.T) {
		check(t, "busy half of each second", run(t, "20", "0.5"), contract.ReasonCompleted)
	})
	t.Run("Killed", func(t *testing.T) {
		id := run(t, "60", "1")
		time.Sleep(12 * time.Second)
		b.ok("ada", "kill", id)
		check(t, "killed after 12 s", id, contract.ReasonKilled)
	})
	rep, err := b.ledger.Audit(t.Context())
	require.NoError(t, err)
	assert.True(t, rep.OK(), "%s", rep)
}

// dutyRoot is the duty job's root: $BOURSE_GPU_DUTY_ROOT, or one built
// now from testdata/gpuduty/duty.c where a C compiler is, or else make
// gpu-tests' bin/gpu/duty-root (a GPU machine without one). Built now
// first, so that a bin/gpu left by an earlier build never stands in for
// the duty.c of this checkout.
func dutyRoot(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv("BOURSE_GPU_DUTY_ROOT"); dir != "" {
		return dir
	}
	if _, err := exec.LookPath("gcc"); err == nil {
		dir := t.TempDir()
		out, err := exec.Command("bash", "../../scripts/gpu-duty-root.sh", dir).CombinedOutput()
		require.NoError(t, err, "build the duty job: %s", out)
		return dir
	}
	_, err := os.Stat("../../bin/gpu/duty-root/bin/duty")
	require.NoError(t, err, "no C compiler here and no bin/gpu/duty-root: run make gpu-tests where Go and gcc are, and carry bin/gpu")
	return "../../bin/gpu/duty-root"
}

// kernelSeconds reads the kernel time a duty job wrote to file.
func kernelSeconds(t *testing.T, file string) float64 {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err, "the job's results came back")
	var k struct {
		KernelSeconds float64 `json:"kernel_seconds"`
	}
	require.NoError(t, json.Unmarshal(data, &k))
	return k.KernelSeconds
}

// copyTree copies the files of from into to, at the same paths and modes.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(from, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		src, err := os.Open(path)
		if err != nil {
			return err
		}
		defer src.Close()
		out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, info.Mode().Perm())
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, src); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	}))
}
