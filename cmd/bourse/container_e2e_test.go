package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/scenario"
	"github.com/bourse/bourse/server/container"
	"github.com/bourse/bourse/server/container/containertest"
	"github.com/bourse/bourse/server/process/usertest"
)

// testImages is an image store of one image, test.example/box:1, whose
// root a test built; it stands where server/image's Store goes.
type testImages struct {
	root   string
	config container.StoreConfig // what bourse server handed it
}

func (s *testImages) open(cfg container.StoreConfig, _ *slog.Logger) (container.Images, error) {
	s.config = cfg
	return s, nil
}

func (s *testImages) Pull(_ context.Context, ref string) (*container.Image, error) {
	if ref != "test.example/box:1" {
		return nil, &bourse.Error{Code: bourse.ENotFound, Message: "manifest unknown"}
	}
	return &container.Image{Ref: ref, Digest: "sha256:" + strings.Repeat("1", 64), RootFS: s.root,
		Config: container.ImageConfig{Env: []string{"PATH=/bin"}, Cmd: []string{"/bin/sh"}}}, nil
}

func (s *testImages) Release(*container.Image) {}

// TestContainerJobs is issue 39's client on a server that runs
// containers: it sees what the server pulls, offers its own image with
// its own command, gets its output and results back, and pays for what
// was metered; an image from elsewhere is refused before anything is
// held.
func TestContainerJobs(t *testing.T) {
	containertest.Need(t)
	b := startBidMarket(t, []scenario.ServerSpec{}...)
	users := usertest.Create(t, 2)
	store := &testImages{root: containertest.Root(t)}
	base := usertest.Dir(t)
	srv := startServerOn(t, noNVML, store.open, `
id: box
nats: {url: `+b.m.URL()+`}
currency: {code: CRED, scale: 2}
policy: {kind: reserve}
heartbeat: 100ms
nvml: off
meter_fallback: full_use
gpus: [{count: 2, model: H100, memory_mib: 81920}]
runner:
  kind: container
  job_users: [`+strings.Join(users, ", ")+`]
  output_dir: `+filepath.Join(base, "jobs")+`
  state_dir: `+filepath.Join(base, "state")+`
  grace: 1s
  pids: 128
  memory_per_gpu: 268435456
  images: {allowed: [test.example], cache_dir: /var/cache/bourse/images, max_bytes: 1073741824, credentials_file: /etc/bourse/registry.json}
`)
	require.Eventually(t, func() bool { return strings.Contains(srv.String(), "msg=registered") }, 10*time.Second, 50*time.Millisecond,
		"the server did not register:\n%s", srv)
	assert.Contains(t, srv.String(), "jobs: kept apart by a container each (runc; network none)")
	assert.Contains(t, srv.String(), "so containers are charged U = GPUs × T")
	assert.Equal(t, container.StoreConfig{Allowed: []string{"test.example"}, CacheDir: "/var/cache/bourse/images", MaxBytes: 1 << 30,
		CredentialsFile: "/etc/bourse/registry.json"}, store.config, "the image store gets runner.images")
	assert.Regexp(t, `(?m)^box +CRED +2 +2 +2× H100 80 GiB +container +full_use +images from test\.example \(at most 1024 MiB\) `, b.ok("ada", "servers"))

	t.Run("Runs", func(t *testing.T) {
		k := b.offerJSON("ada", "--server", "box", "--gpus", "1", "--price", "0.50", "--time-limit", "1m", "--image", "test.example/box:1",
			"--command", "/bin/sh", "--arg", "-c", "--arg", `echo "hello from $(id -u) on $CUDA_VISIBLE_DEVICES"; echo kept > $BOURSE_RESULTS/r.txt; sleep 1`)
		got := b.waitState("ada", k.ID, contract.StateSettled)
		assert.Equal(t, contract.ReasonCompleted, got.Reason)
		assert.Equal(t, contract.MeterFullUse, got.Meter)
		require.NotNil(t, got.Reading)
		st, err := contract.Charge(got.Terms, got.Reading.Usage(), 2)
		require.NoError(t, err)
		assert.True(t, got.Charge.IsPositive() && got.Charge.Equal(st.Charge), "charged %s, want %s for what was metered", got.Charge, st.Charge)

		logs := b.ok("ada", "logs", "--follow", k.ID)
		assert.Regexp(t, `^hello from [1-9][0-9]* on 0\n$`, logs, "a job user's, on its one GPU")
		dir := filepath.Join(t.TempDir(), "results")
		b.ok("ada", "results", k.ID, "-o", dir)
		data, err := os.ReadFile(filepath.Join(dir, "r.txt"))
		require.NoError(t, err)
		assert.Equal(t, "kept\n", string(data))
		assert.Contains(t, b.ok("ada", "show", k.ID), "Job          image test.example/box:1: /bin/sh -c")
	})

	t.Run("NotPulled", func(t *testing.T) {
		// The server's store has no such image: nothing starts, nothing is
		// metered, and the client reads why in the job's stderr. The
		// exchange voids the contract, whole, at its start deadline, or
		// at once when the client kills it.
		k := b.offerJSON("ada", "--server", "box", "--gpus", "1", "--price", "0.50", "--time-limit", "1m", "--image", "test.example/missing:1")
		var errOut string
		require.Eventually(t, func() bool {
			_, errOut, _ = b.bid("ada", "logs", k.ID)
			return strings.Contains(errOut, "the job did not start: the image test.example/missing:1 was not pulled: manifest unknown")
		}, 10*time.Second, 50*time.Millisecond, "the client is not told why: %s", errOut)
		got := b.contract("ada", k.ID)
		assert.Nil(t, got.Reading, "nothing metered")
		assert.Equal(t, contract.StateAccepted, got.State, "never started")
		b.ok("ada", "kill", k.ID)
		got = b.waitState("ada", k.ID, contract.StateVoided)
		assert.True(t, got.Refund.Equal(got.Terms.Prepayment), "refunded whole: %s of %s", got.Refund, got.Terms.Prepayment)
	})

	t.Run("Elsewhere", func(t *testing.T) {
		_, errOut, code := b.bid("ada", "offer", "--gpus", "1", "--price", "0.01", "--time-limit", "1m", "--image", "ghcr.io/acme/train:v1")
		assert.Equal(t, exitRefused, code, errOut)
		assert.Contains(t, errOut, "box: ghcr.io/acme/train:v1 is not an image this server pulls: it pulls from test.example")
	})
}
