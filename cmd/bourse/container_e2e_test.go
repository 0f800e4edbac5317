package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/scenario"
	"github.com/bourse/bourse/server/container/containertest"
	"github.com/bourse/bourse/server/process/usertest"
)

// TestContainerJobs is issue 39's client on a server that runs
// containers: it sees what the server pulls, offers its own image with
// its own command, gets its output and results back, and pays for what
// was metered; an image from elsewhere is refused before anything is
// held.
func TestContainerJobs(t *testing.T) {
	containertest.Need(t)
	b := startBidMarket(t, []scenario.ServerSpec{}...)
	users := usertest.Create(t, 2)
	// The client's image, in a registry of the test's own: busybox, its
	// environment and command as an image's.
	host := containertest.SlowRegistry(t, "/test/slow/", 2*time.Second)
	box := host + "/test/box:1"
	root := containertest.Root(t)
	digest := containertest.Push(t, root, box, v1.Config{Env: []string{"PATH=/bin"}, Cmd: []string{"/bin/sh"}})
	slow := host + "/test/slow:1"                                                                                    // pulled in 4 s and more: its config and its layer come 2 s late each
	containertest.Push(t, root, slow, v1.Config{Env: []string{"PATH=/bin", "IMAGE=slow"}, Cmd: []string{"/bin/sh"}}) // another digest
	base := usertest.Dir(t)
	srv := startServerOn(t, noNVML, openImages, `
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
  images: {allowed: [`+host+`/test], insecure: [`+host+`], cache_dir: `+filepath.Join(base, "images")+`, max_bytes: 1073741824}
`)
	require.Eventually(t, func() bool { return strings.Contains(srv.String(), "msg=registered") }, 10*time.Second, 50*time.Millisecond,
		"the server did not register:\n%s", srv)
	assert.Contains(t, srv.String(), "jobs: kept apart by a container each (runc; network none)")
	assert.Contains(t, srv.String(), "so containers are charged U = GPUs × T")
	assert.Regexp(t, `(?m)^box +CRED +2 +2 +2× H100 80 GiB +container +full_use +images from `+regexp.QuoteMeta(host)+`/test \(at most 1024 MiB\); files up to 1024 MiB `, b.ok("ada", "servers"))

	t.Run("Runs", func(t *testing.T) {
		k := b.offerJSON("ada", "--server", "box", "--gpus", "1", "--price", "0.50", "--time-limit", "1m", "--image", box,
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
		assert.Contains(t, b.ok("ada", "show", k.ID), "Job          image "+box+" ("+digest+"): /bin/sh -c", "the reference, and the digest it ran as")
		assert.Equal(t, digest, got.Image, "the contract names the image by the digest its server pulled")
		pulled, err := os.ReadDir(filepath.Join(base, "images"))
		require.NoError(t, err)
		assert.NotEmpty(t, pulled, "the image store's cache is empty after the pull of %s (%s)", box, digest)
	})

	t.Run("Files", func(t *testing.T) {
		// ada's folder goes with her image: her job finds it in its
		// working folder, its user's, and leaves what it read in its
		// results; she is charged for what was metered.
		folder := t.TempDir()
		require.NoError(t, os.Mkdir(filepath.Join(folder, "data"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(folder, "data", "x.csv"), []byte("ada's data\n"), 0o644))
		k := b.offerJSON("ada", "--server", "box", "--gpus", "1", "--price", "0.50", "--time-limit", "1m", "--image", box, "--files", folder,
			"--command", "/bin/sh", "--arg", "-c", "--arg", `cat data/x.csv; cp data/x.csv $BOURSE_RESULTS/seen.txt; echo "in $(pwd), owner $(stat -c %u data/x.csv), me $(id -u)"`)
		got := b.waitState("ada", k.ID, contract.StateSettled)
		assert.Equal(t, contract.ReasonCompleted, got.Reason)
		require.NotNil(t, got.Reading)
		st, err := contract.Charge(got.Terms, got.Reading.Usage(), 2)
		require.NoError(t, err)
		assert.True(t, got.Charge.IsPositive() && got.Charge.Equal(st.Charge), "charged %s, want %s for what was metered", got.Charge, st.Charge)
		assert.Regexp(t, `^ada's data\nin /bourse/work, owner ([1-9][0-9]*), me ([1-9][0-9]*)\n$`, b.ok("ada", "logs", "--follow", k.ID))
		m := regexp.MustCompile(`owner (\d+), me (\d+)`).FindStringSubmatch(b.ok("ada", "logs", k.ID))
		require.Len(t, m, 3)
		assert.Equal(t, m[2], m[1], "the files are the job user's")
		dir := filepath.Join(t.TempDir(), "results")
		b.ok("ada", "results", k.ID, "-o", dir)
		data, err := os.ReadFile(filepath.Join(dir, "seen.txt"))
		require.NoError(t, err)
		assert.Equal(t, "ada's data\n", string(data))
	})

	t.Run("NotPulled", func(t *testing.T) {
		// The server's store has no such image: nothing starts, nothing is
		// metered, and the client reads why in the job's stderr.
		missing := host + "/test/missing:1"
		k := b.offerJSON("ada", "--server", "box", "--gpus", "1", "--price", "0.50", "--time-limit", "1m", "--image", missing)
		var errOut string
		require.Eventually(t, func() bool {
			_, errOut, _ = b.bid("ada", "logs", k.ID)
			return strings.Contains(errOut, "the job did not start: the image "+missing+" was not pulled: ")
		}, 10*time.Second, 50*time.Millisecond, "the client is not told why: %s", errOut)
		// The server, pulling in the background, could not: its final
		// reading of nothing used, reason failed, ends the contract at
		// once for nothing, not at its start deadline.
		got := b.waitState("ada", k.ID, contract.StateSettled)
		assert.Equal(t, contract.ReasonFailed, got.Reason)
		require.NotNil(t, got.Reading)
		assert.True(t, got.Reading.U.IsZero() && got.Reading.T == 0, "nothing metered: %+v", got.Reading)
		assert.True(t, got.Charge.IsZero(), "charged %s", got.Charge)
		assert.True(t, got.Refund.Equal(got.Terms.Prepayment), "refunded whole: %s of %s", got.Refund, got.Terms.Prepayment)
		assert.Less(t, time.Since(got.AcceptedAt), 10*time.Second, "ended at the failure, not at the start deadline")
	})

	t.Run("SlowPull", func(t *testing.T) {
		// An image pulled slowly is pulled after the start is answered
		// (preparing): the contract waits accepted, its start deadline
		// moved out, and the server's other starts are not held up.
		k := b.offerJSON("ada", "--server", "box", "--gpus", "1", "--price", "0.50", "--time-limit", "1m", "--image", slow,
			"--command", "/bin/sh", "--arg", "-c", "--arg", "echo slow")
		offered := time.Now()
		fast := b.offerJSON("ada", "--server", "box", "--gpus", "1", "--price", "0.50", "--time-limit", "1m", "--image", box,
			"--command", "/bin/sh", "--arg", "-c", "--arg", "echo fast")
		b.waitState("ada", fast.ID, contract.StateRunning)
		assert.Less(t, time.Since(offered), 3*time.Second, "a start held up behind another's pull")
		pending := b.contract("ada", k.ID)
		assert.Equal(t, contract.StateAccepted, pending.State, "the slow image is still pulling")
		assert.True(t, pending.StartDeadline.After(pending.AcceptedAt.Add(time.Minute)), "its start deadline moved out while it prepares: %v", pending.StartDeadline)
		got := b.waitState("ada", k.ID, contract.StateSettled)
		assert.Equal(t, contract.ReasonCompleted, got.Reason)
		assert.NotEmpty(t, got.Image, "started, with its image's digest")
		assert.Equal(t, "slow\n", b.ok("ada", "logs", "--follow", k.ID))
	})

	t.Run("Elsewhere", func(t *testing.T) {
		_, errOut, code := b.bid("ada", "offer", "--gpus", "1", "--price", "0.01", "--time-limit", "1m", "--image", "ghcr.io/acme/train:v1")
		assert.Equal(t, exitRefused, code, errOut)
		assert.Contains(t, errOut, "box: ghcr.io/acme/train:v1 is not an image this server pulls: it pulls from "+host+"/test")
	})
}
