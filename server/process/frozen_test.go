package process_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/server/process"
	"github.com/bourse/bourse/server/process/usertest"
)

// freezable is a job that cannot checkpoint: a suspend freezes it.
func freezable(bin string) *contract.JobSpec {
	return &contract.JobSpec{Command: bin, Env: map[string]string{helperEnv: "count", process.CheckpointEnv: "none"}}
}

// suspend suspends a running job and waits until it has ended.
func suspend(t *testing.T, j server.Job) {
	t.Helper()
	if err := j.Stop(context.Background(), contract.ReasonSuspended); err != nil {
		t.Fatal(err)
	}
	waitDone(t, j, 5*time.Second)
}

func checkSlots(t *testing.T, r *process.Runner, want int, why string) {
	t.Helper()
	if free, limited := r.FreeSlots(); free != want || !limited {
		t.Errorf("FreeSlots = %d, %v; want %d (%s)", free, limited, want, why)
	}
}

// checkEnded checks that the frozen job of a contract was killed, and
// that its stderr says why.
func checkEnded(t *testing.T, out, id string, pid int, why string) {
	t.Helper()
	waitState(t, pid, func(s string) bool { return s == "" }, "ended")
	exit := filepath.Join(out, id, "exit")
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(exit); err == nil {
			break // written once what the job held is given back
		}
	}
	if got := readFile(t, filepath.Join(out, id, "stderr")); !strings.Contains(got, "ended before any resume: "+why) {
		t.Errorf("%s's stderr %q does not say why its frozen job ended (%q)", id, got, why)
	}
	if got := readFile(t, exit); got != "137\n" {
		t.Errorf("%s's exit %q, want the kill's 137", id, got)
	}
}

// TestFrozenJobsGiveWay: a job frozen by a suspend holds its job user,
// and two suspended at once held both users of a two-user server for 10
// minutes, so that every later job failed to start (issue 43 item 3).
// Now a job that needs a user while none is free ends the oldest frozen
// job and runs as its user; FreeSlots, and the server's hello, count
// users held by frozen jobs alone as free; a resume of the job still
// frozen thaws it, and one of the job ended starts it anew; at most
// MaxFrozen are kept.
func TestFrozenJobsGiveWay(t *testing.T) {
	users := usertest.Create(t, 2)
	bin := usertest.Executable(t)
	base := usertest.Dir(t)
	pool := func(t *testing.T, name string, maxFrozen int) (*process.Runner, string) {
		return newRunner(t, func(c *process.Config) {
			c.Users, c.Allowed, c.OutputDir, c.MaxFrozen = users, []string{bin}, filepath.Join(base, name), maxFrozen
		})
	}
	// twoFrozen starts c1 and c2 and suspends them, c1 first.
	twoFrozen := func(t *testing.T, r *process.Runner, out string) (pid1, pid2 int) {
		t.Helper()
		c1 := start(t, r, server.Assignment{Contract: "c1", Job: freezable(bin), GPUs: gpus(0)})
		c2 := start(t, r, server.Assignment{Contract: "c2", Job: freezable(bin), GPUs: gpus(1)})
		firstLine(t, filepath.Join(out, "c1", "stdout"))
		firstLine(t, filepath.Join(out, "c2", "stdout"))
		pid1, pid2 = jobPID(t, r, c1), jobPID(t, r, c2)
		checkSlots(t, r, 0, "both users run a job")
		suspend(t, c1)
		suspend(t, c2)
		return pid1, pid2
	}

	t.Run("NewJobEndsTheOldest", func(t *testing.T) {
		r, out := pool(t, "oldest", 2)
		node, err := server.NewNode(server.NodeConfig{ID: "gpu1", Currency: currency.Currency{Code: "CRED", Scale: 2},
			GPUs: gpus(0, 1, 2, 3), Runner: r, Logger: quiet()})
		if err != nil {
			t.Fatal(err)
		}
		pid1, pid2 := twoFrozen(t, r, out)
		uid1 := procUID(t, pid1)
		waitState(t, pid1, func(s string) bool { return s == "T" }, "frozen")
		waitState(t, pid2, func(s string) bool { return s == "T" }, "frozen")
		checkSlots(t, r, 2, "both users held by frozen jobs alone")
		if h := node.Hello(time.Now()); h.Free != 4 {
			t.Errorf("the hello says %d GPUs free, want 4: frozen jobs alone keep no job from running", h.Free)
		}

		c3 := start(t, r, server.Assignment{Contract: "c3", Job: &contract.JobSpec{Command: bin, Env: map[string]string{helperEnv: "sleep"}}, GPUs: gpus(0)})
		checkEnded(t, out, "c1", pid1, "its job user was needed for a new job\n")
		if s := procState(pid2); s != "T" {
			t.Errorf("c2's frozen job, the younger, is %q: want it kept frozen", s)
		}
		if got := procUID(t, jobPID(t, r, c3)); got != uid1 {
			t.Errorf("the new job runs as uid %d, want the ended frozen job's %d", got, uid1)
		}
		checkSlots(t, r, 1, "one user runs a job, one is held by a frozen job")

		// c2's frozen job is resumed on its GPUs: thawed, as before.
		c4 := start(t, r, server.Assignment{Contract: "c4", Job: freezable(bin), GPUs: gpus(1), Resumes: "c2"})
		if got := jobPID(t, r, c4); got != pid2 {
			t.Errorf("the resume of c2 started pid %d, want its frozen job %d thawed", got, pid2)
		}
		checkSlots(t, r, 0, "both users run a job")

		// c1's was ended: its resume starts the job anew, in its own folder.
		if err := c3.Stop(context.Background(), contract.ReasonKilled); err != nil {
			t.Fatal(err)
		}
		c5 := start(t, r, server.Assignment{Contract: "c5", Job: freezable(bin), GPUs: gpus(0), Resumes: "c1"})
		if got := jobPID(t, r, c5); got == pid1 {
			t.Errorf("the resume of c1 is pid %d, its ended job's", got)
		}
		if got := firstLine(t, filepath.Join(out, "c5", "stdout")); got != "0" {
			t.Errorf("the resume of c1 begins %q, want the job's start (0)", got)
		}
	})

	t.Run("ResumeElsewhereEndsItsOwn", func(t *testing.T) {
		r, out := pool(t, "elsewhere", 2)
		pid1, pid2 := twoFrozen(t, r, out)
		uid2 := procUID(t, pid2)
		// c2 resumed on other GPUs cannot thaw: its frozen job goes
		// first, though c1's is older.
		c3 := start(t, r, server.Assignment{Contract: "c3", Job: freezable(bin), GPUs: gpus(5), Resumes: "c2"})
		checkEnded(t, out, "c2", pid2, "its job user was needed for a new job\n")
		if s := procState(pid1); s != "T" {
			t.Errorf("c1's frozen job is %q: want it kept frozen", s)
		}
		if got := procUID(t, jobPID(t, r, c3)); got != uid2 {
			t.Errorf("c3 runs as uid %d, want c2's %d", got, uid2)
		}
	})

	t.Run("MaxFrozen", func(t *testing.T) {
		// By default one fewer than the users: 1 here.
		r, out := pool(t, "bound", 0)
		pid1, pid2 := twoFrozen(t, r, out)
		checkEnded(t, out, "c1", pid1, "a later suspend froze one more job than the 1 this server keeps frozen")
		waitState(t, pid2, func(s string) bool { return s == "T" }, "frozen")
		checkSlots(t, r, 2, "one user free, one held by a frozen job")
	})
}

// TestMaxFrozen: without job users too, at most MaxFrozen jobs are kept
// frozen, the oldest ended first; a negative MaxFrozen freezes none.
func TestMaxFrozen(t *testing.T) {
	job := helperJob("count")
	job.Env[process.CheckpointEnv] = "none"
	t.Run("Bound", func(t *testing.T) {
		r, out := newRunner(t, func(c *process.Config) { c.MaxFrozen = 2 })
		var pids []int
		for i, id := range []string{"c1", "c2", "c3"} {
			j := start(t, r, server.Assignment{Contract: id, Job: job, GPUs: gpus(i)})
			firstLine(t, filepath.Join(out, id, "stdout"))
			pids = append(pids, jobPID(t, r, j))
			suspend(t, j)
		}
		checkEnded(t, out, "c1", pids[0], "a later suspend froze one more job than the 2 this server keeps frozen")
		for _, pid := range pids[1:] {
			waitState(t, pid, func(s string) bool { return s == "T" }, "frozen")
		}
	})
	t.Run("None", func(t *testing.T) {
		r, out := newRunner(t, func(c *process.Config) { c.MaxFrozen = -1 })
		j := start(t, r, server.Assignment{Contract: "c1", Job: job})
		firstLine(t, filepath.Join(out, "c1", "stdout"))
		if err := j.Stop(context.Background(), contract.ReasonSuspended); err != nil {
			t.Fatal(err)
		}
		if m := waitDone(t, j, 5*time.Second); m.ExitCode == nil {
			t.Error("a suspend with max_frozen -1 froze the job; want it stopped")
		}
	})
}

// TestFrozenConfig: New refuses a bound on frozen jobs more than the job
// users (each frozen job holds one), and a negative StoppedTTL, naming
// the setting.
func TestFrozenConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*process.Config)
		want string
	}{
		{"MaxFrozenOverUsers", func(c *process.Config) { c.Users, c.MaxFrozen = []string{"a", "b"}, 3 },
			"max_frozen: 3: more than the 2 job users"},
		{"NegativeStoppedTTL", func(c *process.Config) { c.StoppedTTL = -time.Minute },
			"stopped_ttl: -1m0s: want how long a frozen job is kept"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := process.Config{Allowed: []string{"/bin/sleep"}, OutputDir: t.TempDir(), Meter: server.FullUse{}, Logger: quiet()}
			tc.edit(&cfg)
			_, err := process.New(cfg)
			if bourse.ErrorCode(err) != bourse.EInvalid || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New: %v; want invalid, saying %q", err, tc.want)
			}
		})
	}
}
