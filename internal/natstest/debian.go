package natstest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// DebianNATS is the path of the nats-server the README installs
// (Debian's package, 2.9): what operators run, which the module's own
// (NATSServer) is not. A test that needs it is skipped where it is not
// installed; scripts/nats-server.sh, which make test runs under, installs
// it.
func DebianNATS(t testing.TB) string {
	t.Helper()
	if p, err := exec.LookPath("nats-server"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/sbin/nats-server"); err == nil {
		return "/usr/sbin/nats-server"
	}
	t.Skip("no nats-server binary: sudo apt-get install nats-server (scripts/nats-server.sh does)")
	return ""
}

// Binary is a nats-server process started with the command line an
// operator would type, stopped when the test ends.
type Binary struct {
	t   testing.TB
	bin string
	cmd *exec.Cmd
	log string
}

// RunBinary starts bin with args (its configuration must name a port
// that is free) and returns once it takes clients.
func RunBinary(t testing.TB, bin string, args ...string) *Binary {
	t.Helper()
	b := &Binary{t: t, bin: bin, log: filepath.Join(t.TempDir(), "nats-server.log")}
	f, err := os.Create(b.log)
	if err != nil {
		t.Fatalf("natstest: %v", err)
	}
	defer f.Close()
	b.cmd = exec.Command(bin, args...)
	b.cmd.Stdout, b.cmd.Stderr = f, f
	if err := b.cmd.Start(); err != nil {
		t.Fatalf("natstest: start %s: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = b.cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = b.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = b.cmd.Process.Kill()
			<-exited
		}
	})
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(b.Log(), "Server is ready"); {
		select {
		case <-exited:
			t.Fatalf("natstest: %s %s exited:\n%s", bin, strings.Join(args, " "), b.Log())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("natstest: %s not ready:\n%s", bin, b.Log())
		}
	}
	return b
}

// Log is what the server has logged so far.
func (b *Binary) Log() string {
	data, _ := os.ReadFile(b.log)
	return string(data)
}

// Reload runs `nats-server --signal reload=PID`, as an operator does (with
// the pid, so that only this test's server gets it), and waits for the
// server to log the reload's outcome, which it returns: "" if it reloaded,
// else the line that says why not. The signal's own exit status is 0
// either way.
func (b *Binary) Reload() string {
	b.t.Helper()
	before := len(b.Log())
	out, err := exec.Command(b.bin, "--signal", "reload="+strconv.Itoa(b.cmd.Process.Pid)).CombinedOutput()
	if err != nil {
		b.t.Fatalf("natstest: nats-server --signal reload: %v: %s", err, out)
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, line := range strings.Split(b.Log()[before:], "\n") {
			switch {
			case strings.Contains(line, "Reloaded server configuration"):
				return ""
			case strings.Contains(line, "Failed to reload"):
				return line
			}
		}
	}
	b.t.Fatalf("natstest: nats-server logged no reload:\n%s", b.Log())
	return ""
}

// FreePort is a loopback port free now, for a configuration to name.
func FreePort(t testing.TB) int {
	t.Helper()
	return freePorts(t, 1)[0]
}
