package process

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/server/spool"
)

// proc is a job's processes: its leader, whose pid is also its session's
// and process group's id, and the rest that members finds.
type proc struct {
	pid     int
	members *members
	dir     string // the output folder its stdout, stderr and exit are in
	// gpus, frozen and ttl are set while the job is frozen: the GPUs it
	// was frozen on, for its resume, when, and what kills it if nobody
	// resumes it.
	gpus   []contract.GPU
	frozen time.Time
	ttl    *time.Timer
	log    *slog.Logger

	exited chan struct{} // closed once the leader has exited and been reaped, and every other process of the job is gone
	state  *os.ProcessState
	// freezer is the job's cgroup where a suspend freezes the job with
	// the cgroup's freezer rather than SIGSTOP; nil for SIGSTOP.
	freezer *cgroup
}

// outputDrain bounds how long an exited job's output is still copied: a
// process that escaped the job (one that left its process group where the
// job has neither a user nor a cgroup of its own) may hold the pipes open
// for ever.
const outputDrain = 2 * time.Second

// spec is a job's process to start.
type spec struct {
	path, name string // the program, and its name as the job gave it (argv[0])
	args       []string
	env        map[string]string
	dir        string // the contract's output folder: stdout, stderr, exit
	work       string // where the job runs
	outputCap  int64
	user       *jobUser // nil: the agent's own
	cgroup     *cgroup  // nil: none
	// contained: the leader starts as the agent, outside the cgroup, and
	// puts the job's processes in it as its user itself (Launch).
	contained bool
	// release runs once every process of the job is gone, before exit is
	// written: it gives back what the job held.
	release func()
	log     *slog.Logger
}

// startProc starts the job's leader in a session and process group of its
// own, as its user and in its cgroup where it has them, with its output
// copied into dir/stdout and dir/stderr up to outputCap bytes each. Once
// the leader has exited, whatever of the job is left is killed; once every
// process of the job is gone and its output drained, release runs and
// dir/exit is written: then the output is whole.
func startProc(sp spec) (*proc, error) {
	dir, outputCap, log := sp.dir, sp.outputCap, sp.log
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
	env := sp.env
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	envList := make([]string, len(keys))
	for i, k := range keys {
		envList[i] = k + "=" + env[k]
	}
	var cred *syscall.Credential
	if sp.user != nil && !sp.contained {
		cred = sp.user.credential()
	}
	cgroupFD := -1
	if sp.cgroup != nil && !sp.contained {
		f, err := sp.cgroup.open()
		if err != nil {
			closeAll()
			return nil, err
		}
		defer f.Close()
		cgroupFD = int(f.Fd())
	}
	cmd := &exec.Cmd{
		Path:        sp.path,
		Args:        append([]string{sp.name}, sp.args...),
		Env:         envList,
		Dir:         sp.work,
		Stdout:      writers[0],
		Stderr:      writers[1],
		SysProcAttr: sysProcAttr(cred, cgroupFD),
	}
	if err := cmd.Start(); err != nil {
		closeAll()
		return nil, err
	}
	for _, w := range writers {
		_ = w.Close()
	}
	m := &members{leader: cmd.Process.Pid, uid: -1, cgroup: sp.cgroup, log: log}
	if sp.user != nil {
		m.uid = sp.user.uid
	}
	p := &proc{pid: cmd.Process.Pid, members: m, dir: dir, log: log, exited: make(chan struct{})}
	if sp.contained && sp.cgroup != nil && sp.cgroup.canFreeze() {
		p.freezer = sp.cgroup
	}
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
		// Whatever the leader left behind goes with it, however it
		// detached: the job is every process it started.
		m.killAll()
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
		if sp.release != nil {
			sp.release()
		}
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

// terminate sends SIGTERM to every process of the job, waits up to grace
// for the leader to exit, then sends SIGKILL. It returns once the job's
// processes are all gone; ctx cuts the grace short.
func (p *proc) terminate(ctx context.Context, grace time.Duration) {
	if p.hasExited() {
		return
	}
	if p.freezer != nil {
		p.setFrozen(false) // a frozen job cannot act on SIGTERM
	}
	p.members.signal(syscall.SIGTERM)
	p.members.signal(syscall.SIGCONT) // nor a stopped one
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

// kill kills every process of the job and waits until they are gone.
func (p *proc) kill() {
	if !p.hasExited() {
		if p.members.cgroup != nil {
			_ = p.members.cgroup.kill()
		}
		p.members.signal(syscall.SIGKILL)
	}
	<-p.exited
}

// freeze stops every process of the job, with the cgroup's freezer or
// SIGSTOP; thaw continues them and reports whether the job still runs.
func (p *proc) freeze() {
	if p.freezer != nil {
		p.setFrozen(true)
		return
	}
	p.members.freeze()
}

func (p *proc) thaw() bool {
	if p.hasExited() {
		return false
	}
	if p.freezer != nil {
		p.setFrozen(false)
		return true
	}
	p.members.signal(syscall.SIGCONT)
	return true
}

// setFrozen freezes or thaws the job's cgroup, saying in the log where it
// could not.
func (p *proc) setFrozen(on bool) {
	if err := p.freezer.freeze(on); err != nil {
		p.log.Warn("the cgroup's freezer", "cgroup", p.freezer.dir, "freeze", on, "err", err)
	}
}

// owns reports whether pid is one of the job's processes (members): what
// the meter counts.
func (p *proc) owns(pid int) bool { return p.members.owns(pid) }

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

func sameGPUs(a, b []contract.GPU) bool {
	return slices.EqualFunc(a, b, func(x, y contract.GPU) bool { return x.Index == y.Index })
}
