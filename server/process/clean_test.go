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
	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/server/process"
	"github.com/bourse/bourse/server/process/usertest"
)

// TestJobUserCleaned: a job leaves, as its user, a crontab and an at job
// (in spools the test makes, as cron's and at's), SysV shared memory, a
// message queue and a semaphore set, files in /tmp, /var/tmp, /dev/shm
// and /run/lock, and a lingering systemd user: the next job as the same
// user finds none of them (the probe of 2026-12-01 had a cron job read a
// later client's environment and rewrite its results).
func TestJobUserCleaned(t *testing.T) {
	users := usertest.Create(t, 1)
	base := usertest.Dir(t)
	spool := filepath.Join(base, "spool")
	cron, at, linger := filepath.Join(spool, "crontabs"), filepath.Join(spool, "atjobs"), filepath.Join(spool, "linger")
	for _, d := range []string{cron, at, linger} {
		if err := os.MkdirAll(d, 0o1777); err != nil { // any user may leave its file, as the setuid crontab and at do
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o1777); err != nil {
			t.Fatal(err)
		}
	}
	defer process.SetSpools([]string{cron}, []string{at}, linger)()
	r, out := newRunner(t, func(c *process.Config) {
		c.Users, c.Allowed, c.AllowShell, c.OutputDir = users, []string{"/bin/sh"}, true, filepath.Join(base, "jobs")
	})
	user := users[0]
	leave := strings.Join([]string{
		"echo '* * * * * cat /proc/*/environ' > " + filepath.Join(cron, user),
		"echo 'cat results' > " + filepath.Join(at, "a0001"),
		"touch " + filepath.Join(linger, user),
		"ipcmk -M 4096 >/dev/null", "ipcmk -Q >/dev/null", "ipcmk -S 1 >/dev/null",
		"echo left > /tmp/bourse-left-$$", "echo left > /var/tmp/bourse-left-$$", "echo left > /dev/shm/bourse-left-$$",
		"echo left > /run/lock/bourse-left-$$",
		"echo done",
	}, " && ")
	j := start(t, r, server.Assignment{Contract: "c-first", Job: &contract.JobSpec{Command: "/bin/sh", Args: []string{"-c", leave}}})
	select {
	case <-j.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the first job did not end")
	}
	if got := firstLine(t, filepath.Join(out, "c-first", "stdout")); got != "done" {
		t.Fatalf("the first job left nothing: it says %q (stderr %q)", got, firstLine(t, filepath.Join(out, "c-first", "stderr")))
	}

	look := strings.Join([]string{
		"ls " + filepath.Join(cron, user) + " " + filepath.Join(at, "a0001") + " " + filepath.Join(linger, user) + " 2>/dev/null",
		"ipcs -m -q -s | grep -c \"$(id -un)\"",
		"ls /tmp/bourse-left-* /var/tmp/bourse-left-* /dev/shm/bourse-left-* /run/lock/bourse-left-* 2>/dev/null",
		"echo end",
	}, "; ")
	// The user is given to the next job only once cleaned: wait for it.
	deadline := time.Now().Add(10 * time.Second)
	var next server.Job
	for {
		var err error
		next, err = r.Start(context.Background(), server.Assignment{Contract: "c-next", Job: &contract.JobSpec{Command: "/bin/sh", Args: []string{"-c", look}}, GPUs: gpus(0)})
		if err == nil {
			break
		}
		if bourse.ErrorCode(err) != bourse.EUnavailable || time.Now().After(deadline) {
			t.Fatalf("the next job: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Cleanup(func() { _ = next.Stop(context.Background(), contract.ReasonKilled) })
	<-next.Done()
	data, err := os.ReadFile(filepath.Join(out, "c-next", "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(data); got != "0\nend\n" {
		t.Errorf("the next job as %s found what the first left:\n%s", user, got)
	}
}

// TestSchedulersRefused: an agent whose job users cron or at would take
// commands from refuses to start, naming the file to put them in; denied
// there, it starts.
func TestSchedulersRefused(t *testing.T) {
	users := usertest.Create(t, 2)
	dir := t.TempDir()
	program := filepath.Join(dir, "crontab")
	if err := os.WriteFile(program, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	deny := filepath.Join(dir, "cron.deny")
	files := [2][3]string{{program, filepath.Join(dir, "cron.allow"), deny}, {filepath.Join(dir, "no-at"), "", ""}}
	defer process.SetSchedulers(files)()
	base := usertest.Dir(t)
	_, err := process.New(process.Config{Users: users, Allowed: []string{"/bin/sh"}, AllowShell: true, OutputDir: filepath.Join(base, "a"), Meter: server.FullUse{}, Logger: quiet()})
	if bourse.ErrorCode(err) != bourse.EInvalid || !strings.Contains(bourse.ErrorMessage(err), "add them to "+deny) {
		t.Fatalf("cron takes commands from the job users (no allow or deny file): %v", err)
	}
	if err := os.WriteFile(deny, []byte(strings.Join(users, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := process.New(process.Config{Users: users, Allowed: []string{"/bin/sh"}, AllowShell: true, OutputDir: filepath.Join(base, "b"), Meter: server.FullUse{}, Logger: quiet()})
	if err != nil {
		t.Fatalf("denied to cron, the job users: %v", err)
	}
	r.Close()
}
