package market_test

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// proc is a bourse process of a fault test (bourse exchange, bourse
// server), started again on the same command line after each kill. Its
// log goes to a file. If it exits when the test did not end it (a panic,
// a fatal error), the test fails with its log; a failing test shows the
// end of every proc's log at its end.
type proc struct {
	t      *testing.T
	name   string
	bin    string
	args   []string
	log    string
	cmd    *exec.Cmd
	exited chan struct{}
	asked  *atomic.Bool // the test ended this run
	err    error        // this run's exit, once exited is closed
}

// startProc starts bin with args as name, and kills it when the test ends.
func startProc(t *testing.T, name, bin string, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, name: name, bin: bin, args: args,
		log: filepath.Join(t.TempDir(), strings.ReplaceAll(name, " ", "-")+".log")}
	p.start()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("%s: the end of its log:\n%s", p.name, tail(p.logText(), 64<<10))
		}
	})
	return p
}

// start starts the process again, as it was started first.
func (p *proc) start() {
	p.t.Helper()
	log, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	require.NoError(p.t, err)
	defer log.Close()
	fmt.Fprintf(log, "--- %s: started\n", time.Now().Format(time.TimeOnly+".000"))
	p.cmd = exec.Command(p.bin, p.args...)
	p.cmd.Stdout, p.cmd.Stderr = log, log
	require.NoError(p.t, p.cmd.Start(), "start %s", p.name)
	p.exited, p.asked = make(chan struct{}), new(atomic.Bool)
	go func(cmd *exec.Cmd, exited chan struct{}, asked *atomic.Bool) {
		err := cmd.Wait()
		p.err = err
		close(exited)
		if !asked.Load() {
			p.t.Errorf("%s exited unasked (%v); its log:\n%s", p.name, err, tail(p.logText(), 64<<10))
		}
	}(p.cmd, p.exited, p.asked)
}

// running reports whether this run of the process has not exited.
func (p *proc) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// signal sends sig to the process, which the test means to end it if end.
func (p *proc) signal(sig syscall.Signal, end bool) {
	p.t.Helper()
	if end {
		p.asked.Store(true)
	}
	require.NoError(p.t, p.cmd.Process.Signal(sig), "%s: %v", p.name, sig)
}

// kill ends the process with SIGKILL, as a machine that dies, and waits.
func (p *proc) kill() {
	if !p.running() {
		return
	}
	p.asked.Store(true)
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// stop ends the process as an operator does (SIGTERM) and returns its
// exit: nil for a clean one.
func (p *proc) stop(within time.Duration) error {
	p.t.Helper()
	p.signal(syscall.SIGTERM, true)
	select {
	case <-p.exited:
		return p.err
	case <-time.After(within):
		p.kill()
		return fmt.Errorf("%s: no exit within %v of SIGTERM", p.name, within)
	}
}

// pause stops the process (SIGSTOP), as a VM pause or starvation does;
// resume lets it go on (SIGCONT).
func (p *proc) pause()  { p.t.Helper(); p.signal(syscall.SIGSTOP, false) }
func (p *proc) resume() { p.t.Helper(); p.signal(syscall.SIGCONT, false) }

func (p *proc) logText() string {
	out, _ := os.ReadFile(p.log)
	return string(out)
}

// countLines is how many lines of the log so far contain s.
func (p *proc) countLines(s string) int {
	return bytes.Count([]byte(p.logText()), []byte(s))
}

// checkNoPanic fails the test if any run of the process panicked, even
// one the test killed afterwards.
func (p *proc) checkNoPanic() {
	p.t.Helper()
	if log := p.logText(); strings.Contains(log, "panic:") || strings.Contains(log, "fatal error:") {
		p.t.Errorf("%s panicked; its log:\n%s", p.name, tail(log, 64<<10))
	}
}

// tail is the last n bytes of s, from a line's start.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return "…\n" + s
}

// buildBourse builds the command into the test's temporary directory.
func buildBourse(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(file))
	bin := filepath.Join(t.TempDir(), "bourse")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/bourse")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

// freeAddr is a free loopback address.
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// exchangeProc is a bourse exchange process and its metrics address.
type exchangeProc struct {
	*proc
	metrics string
}

// startExchange starts bourse exchange with args and its metrics on a
// free address.
func startExchange(t *testing.T, bin, name string, args ...string) *exchangeProc {
	t.Helper()
	metrics := freeAddr(t)
	return &exchangeProc{proc: startProc(t, name, bin, append([]string{"exchange", "--metrics", metrics}, args...)...), metrics: metrics}
}

// waitReady waits until the exchange serves its metrics, which it does
// once it has the usage stream and its consumer, and takes requests.
func (ex *exchangeProc) waitReady() {
	ex.t.Helper()
	waitMetrics(ex.t, ex.metrics, time.Minute)
}

// crash stops p for a moment (SIGSTOP), so that readings and requests are
// handed to it and never answered or acknowledged, then kills it
// (SIGKILL) and starts it again at once.
func crash(p *proc) {
	p.t.Helper()
	p.pause()
	time.Sleep(1500 * time.Millisecond)
	p.kill()
	p.start()
}
