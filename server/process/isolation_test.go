package process_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/server/outbox"
	"github.com/bourse/bourse/server/process"
	"github.com/bourse/bourse/server/process/usertest"
)

// TestIsolation: with job users, a job (mallory's) cannot read the agent's
// configuration, its outbox or its own environment, another running job's
// (bob's) environment, output, results or working folder, nor write into
// them, nor signal bob's job or the agent; and a job user runs one job at
// a time, and is given to the next only once its processes are gone, and
// then finds nothing of the job before.
func TestIsolation(t *testing.T) {
	users := usertest.Create(t, 2)
	bin := usertest.Executable(t)
	base := usertest.Dir(t)
	conf := filepath.Join(base, "gpu1.yaml") // as docs/operations.md asks: 0600
	if err := os.WriteFile(conf, []byte("nats: {user: gpu1, password: gpu1-secret}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ob, err := outbox.Open(outbox.Config{Dir: filepath.Join(base, "outbox"), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	if err := ob.Append(contract.Reading{Contract: "c-bob", Seq: 1}); err != nil {
		t.Fatal(err)
	}
	r, out := newRunner(t, func(c *process.Config) {
		c.Users, c.Allowed, c.OutputDir = users, []string{bin}, filepath.Join(base, "jobs")
	})
	job := func(act string, env map[string]string, args ...string) *contract.JobSpec {
		j := &contract.JobSpec{Command: bin, Args: args, Env: map[string]string{helperEnv: act}}
		for k, v := range env {
			j.Env[k] = v
		}
		return j
	}

	bob := start(t, r, server.Assignment{Contract: "c-bob", Job: job("victim", map[string]string{"SECRET": "bob's WANDB_API_KEY"})})
	if got := firstLine(t, filepath.Join(out, "c-bob", "stdout")); got != "ready" {
		t.Fatalf("bob's job says %q", got)
	}
	bobPID := jobPID(t, r, bob)
	bobDir := filepath.Join(out, "c-bob")
	tries := []string{
		"read:" + conf,
		"read:" + filepath.Join(base, "outbox"),
		"read:" + out,
		"read:" + filepath.Join(bobDir, "stdout"),
		"read:" + filepath.Join(bobDir, "results"),
		"read:" + filepath.Join(bobDir, "results", "secret.txt"),
		"read:" + filepath.Join(bobDir, process.WorkDir),
		"write:" + filepath.Join(bobDir, "results", "planted"),
		"write:" + filepath.Join(bobDir, "exit"),
		"read:/proc/" + strconv.Itoa(bobPID) + "/environ",
		"read:/proc/" + strconv.Itoa(bobPID) + "/cwd/",
		"read:/proc/" + strconv.Itoa(os.Getpid()) + "/environ",
		"signal:" + strconv.Itoa(bobPID),
		"cont:" + strconv.Itoa(bobPID),
		"signal:" + strconv.Itoa(os.Getpid()),
		"cont:" + strconv.Itoa(os.Getpid()),
	}
	entries, _ := os.ReadDir(filepath.Join(base, "outbox"))
	for _, e := range entries {
		tries = append(tries, "read:"+filepath.Join(base, "outbox", e.Name()))
	}
	mallory := start(t, r, server.Assignment{Contract: "c-mallory", Job: job("pry", nil, tries...)})
	if c := exitCode(t, waitDone(t, mallory, 10*time.Second)); c != 0 {
		t.Fatalf("mallory's job: exit %d: %s", c, readFile(t, filepath.Join(out, "c-mallory", "stderr")))
	}
	report := readFile(t, filepath.Join(out, "c-mallory", "stdout"))
	t.Logf("mallory's job:\n%s", report)
	checkDenied(t, report, tries)

	uids := map[string]int{"bob": procUID(t, bobPID), "mallory": reportUID(t, report)}
	if uids["bob"] == uids["mallory"] || uids["bob"] == os.Geteuid() || uids["mallory"] == os.Geteuid() {
		t.Errorf("jobs ran as %v, the agent as %d: want a user each", uids, os.Geteuid())
	}

	t.Run("OneJobAUser", func(t *testing.T) {
		// mallory's user is free again; bob's is not.
		c3 := start(t, r, server.Assignment{Contract: "c3", Job: job("victim", nil)})
		firstLine(t, filepath.Join(out, "c3", "stdout"))
		if got := procUID(t, jobPID(t, r, c3)); got != uids["mallory"] {
			t.Errorf("c3 runs as uid %d; want mallory's free user %d", got, uids["mallory"])
		}
		_, err := r.Start(context.Background(), server.Assignment{Contract: "c4", Job: job("whoami", nil), GPUs: gpus(0)})
		if bourse.ErrorCode(err) != bourse.EUnavailable {
			t.Errorf("a third job with two users busy: %v, want unavailable", err)
		}
		if err := c3.Stop(context.Background(), contract.ReasonKilled); err != nil {
			t.Fatal(err)
		}
		// The next job of that user finds nothing of c3's.
		c3Dir := filepath.Join(out, "c3")
		tries := []string{
			"read:" + filepath.Join(c3Dir, "results"),
			"read:" + filepath.Join(c3Dir, "results", "secret.txt"),
			"write:" + filepath.Join(c3Dir, "results", "planted"),
			"read:" + filepath.Join(c3Dir, "stdout"),
		}
		c5 := start(t, r, server.Assignment{Contract: "c5", Job: job("pry", nil, tries...)})
		waitDone(t, c5, 10*time.Second)
		report := readFile(t, filepath.Join(out, "c5", "stdout"))
		if got := reportUID(t, report); got != uids["mallory"] {
			t.Fatalf("c5 ran as uid %d, want %d", got, uids["mallory"])
		}
		checkDenied(t, report, tries)
		if got := readFile(t, filepath.Join(c3Dir, "results", "secret.txt")); got != "bob's results" {
			t.Errorf("c3's results hold %q", got)
		}
	})
}

// checkDenied fails the test for each try the report says succeeded, and
// for each it does not mention.
func checkDenied(t *testing.T, report string, tries []string) {
	t.Helper()
	for _, try := range tries {
		switch {
		case strings.Contains(report, "LEAK "+try+"\n"):
			t.Errorf("a job could %s", try)
		case !strings.Contains(report, "denied "+try+":"):
			t.Errorf("the job did not try %s:\n%s", try, report)
		default:
			// Denied for want of permission, not for a wrong path.
			line := report[strings.Index(report, "denied "+try+":"):]
			line, _, _ = strings.Cut(line, "\n")
			if !strings.HasSuffix(line, "permission denied") && !strings.HasSuffix(line, "operation not permitted") {
				t.Errorf("%s", line)
			}
		}
	}
}

func reportUID(t *testing.T, report string) int {
	t.Helper()
	var uid int
	if _, err := fmt.Sscanf(report, "uid %d\n", &uid); err != nil {
		t.Fatalf("report %q: %v", report, err)
	}
	return uid
}

// procUID is the real uid of a running process.
func procUID(t *testing.T, pid int) int {
	t.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
			uid, err := strconv.Atoi(strings.Fields(rest)[0])
			if err != nil {
				t.Fatal(err)
			}
			return uid
		}
	}
	t.Fatalf("no Uid in %s", data)
	return 0
}

// TestUsersNeedRoot: an agent that cannot switch users refuses job users
// at its start, and says so. As root the test runs New as another user.
func TestUsersNeedRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		_, err := process.New(process.Config{Allowed: []string{"/bin/sleep"}, Users: []string{"nobody"}, OutputDir: t.TempDir(), Logger: quiet()})
		checkNeedsRoot(t, fmt.Sprint(err))
		return
	}
	users := usertest.Create(t, 2)
	bin := usertest.Executable(t)
	cmd := exec.Command(bin, users[0], filepath.Join(usertest.Dir(t), "jobs"))
	cmd.Env = []string{helperEnv + "=new-users"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uidOf(t, users[1]), Gid: uidOf(t, users[1])}}
	got, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, got)
	}
	checkNeedsRoot(t, string(got))
}

func checkNeedsRoot(t *testing.T, err string) {
	t.Helper()
	for _, want := range []string{"permission_denied", "root", "CAP_SETUID"} {
		if !strings.Contains(err, want) {
			t.Errorf("New with job users as a user who is not root: %q; want it to say %q", err, want)
		}
	}
}

func uidOf(t *testing.T, name string) uint32 {
	t.Helper()
	out, err := exec.Command("id", "-u", name).Output()
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	return uint32(n)
}
