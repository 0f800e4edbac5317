package process

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bourse/bourse/server/spool"
	"github.com/bourse/bourse/trade"
)

// proc is a job's process group: its leader's pid is the group's id.
type proc struct {
	pid  int
	gpus []trade.GPU // set while the group is frozen, for its resume
	ttl  *time.Timer // kills a frozen group nobody resumed
	log  *slog.Logger

	exited chan struct{} // closed once the leader has exited and been reaped
	state  *os.ProcessState
}

// outputDrain bounds how long an exited job's output is still copied: a
// process that left the group may hold the pipes open for ever.
const outputDrain = 2 * time.Second

// startProc starts path as the leader of a new process group, with its
// output copied into dir/stdout and dir/stderr up to outputCap bytes each,
// and dir/exit written once the leader has exited and its output is
// drained: then the output is whole.
func startProc(path, name string, args []string, env map[string]string, dir string, outputCap int64, log *slog.Logger) (*proc, error) {
	var files []*os.File // to close if the start fails
	closeAll := func() {
		for _, f := range files {
			_ = f.Close()
		}
	}
	var readers, writers []*os.File
	var outputs []*capped
	for _, stream := range []string{spool.StdoutFile, spool.StderrFile} {
		f, err := os.OpenFile(filepath.Join(dir, stream), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
		if err != nil {
			closeAll()
			return nil, err
		}
		files = append(files, f)
		st, err := f.Stat()
		if err != nil {
			closeAll()
			return nil, err
		}
		r, w, err := os.Pipe()
		if err != nil {
			closeAll()
			return nil, err
		}
		files = append(files, r, w)
		readers, writers = append(readers, r), append(writers, w)
		outputs = append(outputs, &capped{f: f, name: stream, left: max(outputCap-st.Size(), 0), log: log})
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	envList := make([]string, len(keys))
	for i, k := range keys {
		envList[i] = k + "=" + env[k]
	}
	cmd := &exec.Cmd{
		Path:        path,
		Args:        append([]string{name}, args...),
		Env:         envList,
		Dir:         dir,
		Stdout:      writers[0],
		Stderr:      writers[1],
		SysProcAttr: sysProcAttr(),
	}
	if err := cmd.Start(); err != nil {
		closeAll()
		return nil, err
	}
	for _, w := range writers {
		_ = w.Close()
	}
	p := &proc{pid: cmd.Process.Pid, log: log, exited: make(chan struct{})}
	var copying sync.WaitGroup
	for i, r := range readers {
		copying.Add(1)
		go func() {
			defer copying.Done()
			_, _ = io.Copy(outputs[i], r)
			_ = r.Close()
			outputs[i].close()
		}()
	}
	go func() {
		err := cmd.Wait()
		var exitErr *exec.ExitError
		if err != nil && !errors.As(err, &exitErr) {
			log.Error("wait for the job", "pid", p.pid, "err", err)
		}
		// Whatever the leader left behind in its group goes with it.
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
		drained := make(chan struct{})
		go func() { copying.Wait(); close(drained) }()
		select {
		case <-drained:
		case <-time.After(outputDrain):
			for _, r := range readers {
				_ = r.Close()
			}
			<-drained
		}
		p.state = cmd.ProcessState
		if err := os.WriteFile(filepath.Join(dir, spool.ExitFile), []byte(strconv.Itoa(p.exitCode())+"\n"), 0o640); err != nil {
			log.Error("record the job's exit: its output will be sent at the agent's next start", "err", err)
		}
		close(p.exited)
	}()
	return p, nil
}

// exitCode is the leader's exit status, 128+n for a death by signal n as
// shells report it. Call it after exited is closed.
func (p *proc) exitCode() int {
	if ws, ok := p.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return p.state.ExitCode()
}

func (p *proc) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

func (p *proc) signal(sig syscall.Signal) {
	if err := syscall.Kill(-p.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		p.log.Warn("signal the job", "pid", p.pid, "signal", sig, "err", err)
	}
}

// terminate sends SIGTERM to the group, waits up to grace for the leader
// to exit, then sends SIGKILL. It returns once the leader has exited;
// ctx cut the grace short.
func (p *proc) terminate(ctx context.Context, grace time.Duration) {
	if p.hasExited() {
		return
	}
	p.signal(syscall.SIGTERM)
	p.signal(syscall.SIGCONT) // a frozen job cannot act on SIGTERM
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.exited:
		return
	case <-t.C:
		p.log.Info("the job outlived its grace period; killing it", "pid", p.pid, "grace", grace)
	case <-ctx.Done():
	}
	p.kill()
}

// kill sends SIGKILL to the group and waits for the leader to exit.
func (p *proc) kill() {
	if !p.hasExited() {
		p.signal(syscall.SIGKILL)
	}
	<-p.exited
}

// freeze stops every process of the group with SIGSTOP; thaw continues
// them and reports whether the group still runs.
func (p *proc) freeze() { p.signal(syscall.SIGSTOP) }

func (p *proc) thaw() bool {
	if p.hasExited() {
		return false
	}
	p.signal(syscall.SIGCONT)
	return true
}

// owns reports whether pid is in the job's process group, from
// /proc/<pid>/stat. A process that has left the group (setsid) is not
// counted; on systems without /proc only the leader is.
func (p *proc) owns(pid int) bool {
	if pid == p.pid {
		return true
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	pgid, err := statPGID(string(data))
	return err == nil && pgid == p.pid
}

// statPGID reads the process group, the fifth field, of a /proc/<pid>/stat
// line. The command name, the second field, is in parentheses and may hold
// spaces and parentheses itself, so the fields are counted from its last ')'.
func statPGID(stat string) (int, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed stat %q", stat)
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 3 {
		return 0, fmt.Errorf("malformed stat %q", stat)
	}
	return strconv.Atoi(f[2]) // state, ppid, pgrp
}

// capped writes at most left bytes to f and drops the rest, so that a job
// cannot fill the server's disk.
type capped struct {
	f       *os.File
	name    string
	left    int64
	dropped int64
	failed  bool
	log     *slog.Logger
}

func (c *capped) Write(b []byte) (int, error) {
	n := min(int64(len(b)), c.left)
	if n > 0 && !c.failed {
		if _, err := c.f.Write(b[:n]); err != nil {
			c.failed = true
			c.log.Error("job output", "file", c.f.Name(), "err", err)
		}
	}
	c.left -= n
	c.dropped += int64(len(b)) - n
	return len(b), nil
}

func (c *capped) close() {
	if c.dropped > 0 {
		c.log.Warn("job output over its cap; the rest was dropped", "stream", c.name, "dropped_bytes", c.dropped)
	}
	if err := c.f.Close(); err != nil {
		c.log.Error("job output", "file", c.f.Name(), "err", err)
	}
}

func sameGPUs(a, b []trade.GPU) bool {
	return slices.EqualFunc(a, b, func(x, y trade.GPU) bool { return x.Index == y.Index })
}
