package process_test

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestJobDiesWithAgent kills an agent (the test binary as a helper that
// runs a job) with SIGKILL, which it cannot catch: its job dies with it.
func TestJobDiesWithAgent(t *testing.T) {
	agent := exec.Command(os.Args[0], t.TempDir())
	agent.Env = []string{helperEnv + "=runner"}
	out, err := agent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = agent.Process.Kill(); _ = agent.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the agent said nothing: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("the agent said %q", line)
	}
	t.Cleanup(func() {
		if t.Failed() {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	if procState(pid) == "" {
		t.Fatalf("the job %d is not running", pid)
	}

	if err := agent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = agent.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for procState(pid) != "" {
		if time.Now().After(deadline) {
			t.Fatalf("the job %d outlived its agent", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
