package process_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/server/process"
	"github.com/bourse/bourse/server/process/usertest"
)

// TestDetached: a job is every process it starts, however it detaches. A
// child that leaves the job's process group, in a session of its own
// (setsid) or orphaned by a double fork, doing CPU work, is in the
// runner's view of the job (what the meter counts), dies when the job is
// stopped, and when the job's leader exits first the job ends (and its
// GPUs come free) only once the child is gone too.
func TestDetached(t *testing.T) {
	for _, h := range handles(t) {
		t.Run(h.name, func(t *testing.T) {
			for _, mode := range []string{"setsid", "doublefork"} {
				t.Run(mode, func(t *testing.T) { testDetached(t, h, mode) })
			}
		})
	}
}

func testDetached(t *testing.T, h handle, mode string) {
	t.Run("Stop", func(t *testing.T) {
		meter := &fakeMeter{perSec: decimal.NewFromInt(1)}
		r, dir := newRunner(t, func(c *process.Config) { h.edit(c); c.Meter = meter })
		j := start(t, r, server.Assignment{Contract: "c1", Job: h.job("detach", mode, "wait")})
		child := childPID(t, filepath.Join(dir, "c1", "stdout"))
		meter.mu.Lock()
		owns := meter.owns
		meter.mu.Unlock()
		if !owns(child) {
			t.Errorf("the runner's view of the job lacks its child %d (%s): the meter would not count it", child, mode)
		}
		if err := j.Stop(context.Background(), contract.ReasonKilled); err != nil {
			t.Fatal(err)
		}
		if s := procState(child); s != "" {
			t.Errorf("Stop returned with the job's child %d (%s) alive (state %s)", child, mode, s)
		}
	})
	t.Run("LeaderExits", func(t *testing.T) {
		r, dir := newRunner(t, h.edit)
		j := start(t, r, server.Assignment{Contract: "c1", Job: h.job("detach", mode, "exit")})
		child := childPID(t, filepath.Join(dir, "c1", "stdout"))
		waitDone(t, j, 10*time.Second)
		if s := procState(child); s != "" {
			t.Errorf("the job ended, its GPUs free for the next contract, with its child %d (%s) alive (state %s)", child, mode, s)
		}
	})

	t.Run("Suspend", func(t *testing.T) {
		// A job that cannot checkpoint is frozen whole, and thawed whole.
		r, dir := newRunner(t, h.edit)
		job := h.job("detach", mode, "wait")
		job.Env[process.CheckpointEnv] = "none"
		j := start(t, r, server.Assignment{Contract: "c1", Job: job})
		child := childPID(t, filepath.Join(dir, "c1", "stdout"))
		if err := j.Stop(context.Background(), contract.ReasonSuspended); err != nil {
			t.Fatal(err)
		}
		waitState(t, child, func(s string) bool { return s == "T" }, "stopped (T) with its frozen job")
		j2 := start(t, r, server.Assignment{Contract: "c2", Job: job, Resumes: "c1"})
		waitState(t, child, func(s string) bool { return s == "R" }, "running again with its thawed job")
		if err := j2.Stop(context.Background(), contract.ReasonKilled); err != nil {
			t.Fatal(err)
		}
		if s := procState(child); s != "" {
			t.Errorf("the resumed job's child %d (%s) outlived its stop (state %s)", child, mode, s)
		}
	})
}

// TestProcessGroupOnly: without a user or a cgroup of its own (an agent
// that is not root, or told so), a job is its process group: a stop still
// reaches every process that stayed in it.
func TestProcessGroupOnly(t *testing.T) {
	r, dir := newRunner(t, func(c *process.Config) { c.Cgroup, c.Grace = process.CgroupOff, 100*time.Millisecond })
	if got := r.Isolation(); got != "nothing: jobs run as the agent's own user; a process group each (a process that leaves it escapes)" {
		t.Errorf("Isolation() = %q", got)
	}
	j := start(t, r, server.Assignment{Contract: "c1", Job: helperJob("stubborn")})
	child := childPID(t, filepath.Join(dir, "c1", "stdout"))
	if err := j.Stop(context.Background(), contract.ReasonKilled); err != nil {
		t.Fatal(err)
	}
	if s := procState(child); s != "" {
		t.Errorf("the job's child %d in its group outlived its stop (state %s)", child, s)
	}
}

// childPID reads the pid a detach helper printed, and kills that process
// when the test ends, whatever the runner did.
func childPID(t *testing.T, stdout string) int {
	t.Helper()
	line := firstLine(t, stdout)
	pid, err := strconv.Atoi(line)
	if err != nil {
		t.Fatalf("the job said %q", line)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	return pid
}

// handle is a way the runner can know a job's processes, and the test
// job to run under it.
type handle struct {
	name string
	edit func(*process.Config)
	job  func(act string, args ...string) *contract.JobSpec
}

// handles are the ways this machine allows: a cgroup per job where one
// can be made, a user per job where users can be made (root), both, and
// each says why it is left out where it is.
func handles(t *testing.T) []handle {
	var out []handle
	if why := cgroupMissing(t); why == "" {
		out = append(out, handle{name: "Cgroup", job: helperJob,
			edit: func(c *process.Config) { c.Cgroup = process.CgroupRequired }})
	} else {
		t.Logf("no cgroup test: %s", why)
	}
	t.Run("Users", func(t *testing.T) { usertest.Need(t) })
	if os.Geteuid() != 0 {
		return out
	}
	users := usertest.Create(t, 2)
	bin := usertest.Executable(t)
	job := func(act string, args ...string) *contract.JobSpec {
		return &contract.JobSpec{Command: bin, Args: args, Env: map[string]string{helperEnv: act}}
	}
	asUser := func(c *process.Config) {
		c.Users, c.Allowed, c.OutputDir = users[:1], []string{bin}, filepath.Join(usertest.Dir(t), "jobs")
	}
	out = append(out, handle{name: "User", job: job, edit: func(c *process.Config) { asUser(c); c.Cgroup = process.CgroupOff }})
	if cgroupMissing(t) == "" {
		out = append(out, handle{name: "UserAndCgroup", job: job, edit: func(c *process.Config) { asUser(c); c.Cgroup = process.CgroupRequired }})
	}
	return out
}

// cgroupMissing says why no cgroup can be made for jobs here, or "".
func cgroupMissing(t *testing.T) string {
	r, err := process.New(process.Config{Allowed: []string{"/bin/sleep"}, OutputDir: t.TempDir(), Cgroup: process.CgroupRequired, Logger: quiet()})
	if err != nil {
		return err.Error()
	}
	r.Close()
	return ""
}
