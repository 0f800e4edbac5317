package process

import (
	"context"
	"sync"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/server"
)

// job is a contract's run of a process group. The group may outlive it:
// a suspend that freezes the group ends the job and keeps the group for a
// resume, which wraps it in a new job.
type job struct {
	host      *Host
	contract  string
	proc      *proc
	gpus      []contract.GPU
	canFreeze bool // the job cannot checkpoint: suspend freezes it
	started   time.Time
	gauge     server.Gauge
	limit     *time.Timer // the runner's own time limit; nil for none
	done      chan struct{}
	// stopSignal is closed when the job was frozen, to end watch.
	stopSignal chan struct{}

	stopping sync.Mutex // one Stop at a time
	mu       sync.Mutex
	ended    bool
	elapsed  time.Duration // T, fixed when the job ended
	exitCode *int
}

var _ server.Job = (*job)(nil)

func (j *job) Done() <-chan struct{} { return j.done }

// watch ends the job when its leader exits.
func (j *job) watch() {
	select {
	case <-j.proc.exited:
		code := j.proc.exitCode()
		j.end(&code)
	case <-j.stopSignal:
	}
}

// end ends the job once: T stops, the meter takes its last sample.
func (j *job) end(exitCode *int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.ended {
		return
	}
	j.ended, j.elapsed, j.exitCode = true, time.Since(j.started), exitCode
	if j.limit != nil {
		j.limit.Stop()
	}
	j.gauge.Stop()
	close(j.done)
}

// Stop suspends or kills the job. A suspend of a job that cannot
// checkpoint freezes its group with SIGSTOP and keeps it for a resume;
// every other stop is SIGTERM to the group, the grace period (cut short
// when ctx ends), then SIGKILL. Stop returns once the job has ended.
func (j *job) Stop(ctx context.Context, reason contract.Reason) error {
	j.stopping.Lock()
	defer j.stopping.Unlock()
	j.mu.Lock()
	ended := j.ended
	j.mu.Unlock()
	if ended {
		return nil
	}
	if j.canFreeze && (reason == contract.ReasonSuspended || reason == contract.ReasonPreempted) {
		j.proc.freeze()
		j.proc.gpus = j.gpus
		j.end(nil)
		close(j.stopSignal)
		if j.proc.hasExited() {
			return nil // it exited meanwhile: nothing to resume
		}
		j.host.keepStopped(j.contract, j.proc)
		j.host.log.Info("job frozen for a resume", "contract", j.contract, "pid", j.proc.pid)
		return nil
	}
	j.proc.terminate(ctx, j.host.cfg.Grace)
	<-j.done
	return nil
}

// Measure reads T from the wall clock, S as the GPUs assigned, and U and
// the energy from the meter. U is capped at S·T: sampling cannot make a
// job busier than its GPUs.
func (j *job) Measure() (server.Measurement, error) {
	j.mu.Lock()
	ended, t, code := j.ended, j.elapsed, j.exitCode
	j.mu.Unlock()
	if !ended {
		t = time.Since(j.started)
	}
	s := decimal.NewFromInt(int64(len(j.gpus)))
	m := server.Measurement{T: t, S: s, ExitCode: code}
	m.U, m.EnergyJ = j.gauge.Read()
	m.U = decimal.Min(m.U, s.Mul(decimal.New(int64(t), -9)))
	return m, nil
}

// PID is the process id of the job's leader, which is also its process
// group's id.
func (j *job) PID() int { return j.proc.pid }
