package container

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/server/process"
	"github.com/bourse/bourse/server/spool"
)

// TestRunsTheImage: a job runs in its image as a job user, in its working
// folder, with its variables and the runner's, and leaves its results;
// once it has ended nothing of it is left (its bundle, its container, its
// overlay), its image is released, and its output is whole.
func TestRunsTheImage(t *testing.T) {
	rg := newRig(t, func(c *Config) {
		c.AllowEnv = []string{"SEED"}
		c.Env = map[string]string{"OPERATOR": "1", "FROM_IMAGE": "operator"}
	})
	id, j := rg.startJob(t, &contract.JobSpec{Image: boxRef, Command: "/bin/sh", Args: []string{"-c",
		`id -u; pwd; echo "$HOME $BOURSE_RESULTS $CUDA_VISIBLE_DEVICES $BOURSE_CONTRACT"; echo "$SEED $FROM_IMAGE $OPERATOR";` +
			`echo done > $BOURSE_RESULTS/out.txt; echo to-stderr >&2; exit 3`}, Env: map[string]string{"SEED": "42"}})
	code, out := rg.finish(t, id, j)
	assert.Equal(t, 3, code, "the container's exit is the job's; stderr: %s", rg.file(t, id, spool.StderrFile))
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 4, "stdout: %q", out)
	uid, err := strconv.Atoi(lines[0])
	require.NoError(t, err)
	assert.NotZero(t, uid, "never root")
	assert.Equal(t, WorkMount, lines[1], "in its working folder")
	assert.Equal(t, WorkMount+" "+ResultsMount+" 0 "+id, lines[2])
	assert.Equal(t, "42 yes 1", lines[3], "the job's variable over the image's, the image's over the operator's")
	assert.Equal(t, "to-stderr\n", rg.file(t, id, spool.StderrFile))
	assert.Equal(t, "done\n", rg.file(t, id, filepath.Join(spool.ResultsDir, "out.txt")))
	_, err = os.Stat(filepath.Join(rg.out, id, "work"))
	assert.True(t, os.IsNotExist(err), "its working folder is gone: %v", err)
	assert.Empty(t, rg.leftovers(t), "its bundle and container are gone")
	assert.Equal(t, int64(1), rg.images.released.Load(), "its image is released")
	assert.Equal(t, int64(1), rg.meter.tracked.Load(), "it was metered")
}

// TestWhatRuns: the offer's command replaces the image's entrypoint and
// command, its arguments alone the image's command; without either the
// image's own run; an image that names neither, with an offer that names
// none, is refused before anything starts.
func TestWhatRuns(t *testing.T) {
	rg := newRig(t, nil)
	rg.images.entrypoint, rg.images.cmdOf = []string{"/bin/echo", "entry"}, []string{"cmd"}
	for _, tt := range []struct {
		name string
		job  contract.JobSpec
		want string
	}{
		{"Image", contract.JobSpec{Image: boxRef}, "entry cmd\n"},
		{"Args", contract.JobSpec{Image: boxRef, Args: []string{"a", "b c"}}, "entry a b c\n"},
		{"Command", contract.JobSpec{Image: boxRef, Command: "/bin/echo", Args: []string{"own"}}, "own\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			id, j := rg.startJob(t, &tt.job)
			code, out := rg.finish(t, id, j)
			assert.Equal(t, 0, code, rg.file(t, id, spool.StderrFile))
			assert.Equal(t, tt.want, out)
		})
	}
	rg.images.entrypoint, rg.images.cmdOf = nil, nil
	_, err := rg.Start(context.Background(), server.Assignment{Contract: "c-nothing", Job: &contract.JobSpec{Image: boxRef}, GPUs: []contract.GPU{{Index: 0}}})
	assert.Equal(t, bourse.EInvalidOffer, bourse.ErrorCode(err), "%v", err)
	assert.Contains(t, bourse.ErrorMessage(err), "names no entrypoint or command")
	assert.Equal(t, "not started\n", rg.file(t, "c-nothing", spool.ExitFile))
	assert.Empty(t, rg.leftovers(t))
}

// TestCheck: the runner takes an image from its sources alone, and
// variables its configuration allows; what it says it runs is what it
// takes.
func TestCheck(t *testing.T) {
	rg := newRig(t, func(c *Config) { c.AllowEnv = []string{"SEED"} })
	runs := rg.Runs()
	assert.Equal(t, protocol.RunnerContainer, runs.Runner)
	assert.Equal(t, contract.MeterFullUse, runs.Meter)
	require.NotNil(t, runs.Images)
	assert.Equal(t, []string{"test.example"}, runs.Images.Allowed)
	for _, tt := range []struct {
		job  *contract.JobSpec
		code bourse.Code
	}{
		{&contract.JobSpec{Image: boxRef}, ""},
		{&contract.JobSpec{Image: boxRef, Env: map[string]string{"SEED": "1", process.CheckpointEnv: "none"}}, ""},
		{&contract.JobSpec{Image: "ghcr.io/acme/x"}, bourse.EJobUnsupported},
		{&contract.JobSpec{Command: "/bin/sh"}, bourse.EJobUnsupported},
		{nil, bourse.EJobUnsupported},
		{&contract.JobSpec{Image: boxRef, Env: map[string]string{"LD_PRELOAD": "x"}}, bourse.EPermission},
		{&contract.JobSpec{Image: boxRef, Env: map[string]string{"CUDA_VISIBLE_DEVICES": "1"}}, bourse.EPermission},
	} {
		err := rg.Check(tt.job)
		assert.Equal(t, tt.code, bourse.ErrorCode(err), "%+v: %v", tt.job, err)
		assert.Equal(t, tt.code == "", (*contract.Runs)(&runs).Takes(tt.job) && err == nil, "%+v", tt.job)
	}
}

// TestPullFails: an image the store cannot give starts nothing: no job
// user or cgroup is held, nothing is metered, the client's stderr says
// why and the output is complete; the runner goes on.
func TestPullFails(t *testing.T) {
	rg := newRig(t, nil)
	rg.images.fail = &bourse.Error{Code: bourse.ENotFound, Message: "manifest unknown: test.example/box:1"}
	_, err := rg.Start(context.Background(), server.Assignment{Contract: "c-nopull", Job: &contract.JobSpec{Image: boxRef}, GPUs: []contract.GPU{{Index: 0}}})
	require.Error(t, err)
	assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err))
	assert.Contains(t, bourse.ErrorMessage(err), "the image test.example/box:1 was not pulled: manifest unknown")
	assert.Contains(t, rg.file(t, "c-nopull", spool.StderrFile), "the image test.example/box:1 was not pulled: manifest unknown")
	assert.Equal(t, "not started\n", rg.file(t, "c-nopull", spool.ExitFile))
	assert.Zero(t, rg.meter.tracked.Load(), "nothing metered")

	rg.images.fail = errors.New("dial tcp: connection refused")
	_, err = rg.Start(context.Background(), server.Assignment{Contract: "c-nopull2", Job: &contract.JobSpec{Image: boxRef}, GPUs: []contract.GPU{{Index: 0}}})
	assert.Equal(t, bourse.EUnavailable, bourse.ErrorCode(err), "%v", err)

	rg.images.fail = nil
	for range 3 { // more jobs than users: none was kept by the failed starts
		code, out := rg.run(t, boxRef, "echo ok")
		assert.Equal(t, 0, code)
		assert.Equal(t, "ok\n", out)
	}
	assert.Empty(t, rg.leftovers(t))
}

// TestStop: a kill sends SIGTERM to every process of the container, which
// a job may catch; one that ignores it (a PID 1 without a handler does)
// is killed after the grace. Either way the job ends only once its
// container is gone.
func TestStop(t *testing.T) {
	rg := newRig(t, func(c *Config) { c.Grace = 500 * time.Millisecond })
	t.Run("Caught", func(t *testing.T) {
		id, j := rg.start(t, boxRef, `trap 'echo checkpointed; exit 7' TERM; echo ready; while true; do sleep 0.05; done`)
		rg.waitOutput(t, id, "ready")
		require.NoError(t, j.Stop(context.Background(), contract.ReasonSuspended))
		code, out := rg.finish(t, id, j)
		assert.Equal(t, 7, code)
		assert.Contains(t, out, "checkpointed")
	})
	t.Run("Ignored", func(t *testing.T) {
		id, j := rg.start(t, boxRef, `echo ready; exec sleep 1000`)
		rg.waitOutput(t, id, "ready")
		require.NoError(t, j.Stop(context.Background(), contract.ReasonKilled))
		code, _ := rg.finish(t, id, j)
		assert.Equal(t, 137, code, "killed (SIGKILL) after the grace")
	})
	assert.Empty(t, rg.leftovers(t))
}

// TestSuspendResume: a job that cannot checkpoint is frozen whole by its
// cgroup's freezer, kept for its resume, and thawed by a contract that
// resumes it on the same GPUs; its output goes on where it was.
func TestSuspendResume(t *testing.T) {
	rg := newRig(t, nil)
	job := &contract.JobSpec{Image: boxRef, Command: "/bin/sh", Env: map[string]string{process.CheckpointEnv: "none"},
		Args: []string{"-c", `i=0; while true; do i=$((i+1)); echo $i; sleep 0.02; done`}}
	id, j := rg.startJob(t, job)
	rg.waitOutput(t, id, "3\n")
	pid := rg.initPID(t, id)
	cg := cgroupOf(t, pid)
	require.NoError(t, j.Stop(context.Background(), contract.ReasonSuspended))
	<-j.Done()
	assert.Contains(t, readFile(t, filepath.Join(cg, "cgroup.events")), "frozen 1", "frozen by its cgroup")
	frozen := rg.file(t, id, spool.StdoutFile)

	next, err := rg.Start(context.Background(), server.Assignment{Contract: id + "-r", Job: job, GPUs: []contract.GPU{{Index: 0, Model: "H100"}}, Resumes: id})
	require.NoError(t, err)
	assert.Contains(t, readFile(t, filepath.Join(cg, "cgroup.events")), "frozen 0", "thawed")
	rg.waitOutput(t, id, frozen+strconv.Itoa(len(strings.Split(strings.TrimSpace(frozen), "\n"))+1)+"\n")
	require.NoError(t, next.Stop(context.Background(), contract.ReasonKilled))
	<-next.Done()
	rg.waitExit(t, id)
	assert.Empty(t, rg.leftovers(t))
}

// waitOutput waits until the job's stdout holds s, at most a minute.
func (rg *rig) waitOutput(t *testing.T, id, s string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !strings.Contains(rg.file(t, id, spool.StdoutFile), s); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("job %s never wrote %q: stdout %q, stderr %q", id, s, rg.file(t, id, spool.StdoutFile), rg.file(t, id, spool.StderrFile))
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
