package server

import (
	"context"
	"sync"
	"time"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
	"github.com/shopspring/decimal"
)

// defaultWatts is the draw of a busy GPU for the synthetic meter: about an
// H100 PCIe under load.
const defaultWatts = 300

// Synthetic runs no process: each job consumes its profile, every GPU busy
// a fraction Utilization of the time for Duration, and its meter computes
// the usage from the clock. A job without a profile keeps its GPUs fully
// busy until it is stopped.
type Synthetic struct {
	Now   func() time.Time // nil for time.Now
	Watts decimal.Decimal  // power of a busy GPU in watts; zero for 300
}

var (
	_ Runner    = (*Synthetic)(nil)
	_ Metered   = (*Synthetic)(nil)
	_ Describer = (*Synthetic)(nil)
)

// Runs is a synthetic runner's: no program, the synthetic meter. A node
// with this runner refuses an offer that names a program, which it would
// not run.
func (s *Synthetic) Runs() protocol.Runs {
	return protocol.Runs{Runner: protocol.RunnerSynthetic, Meter: contract.MeterSynthetic}
}

// Meter is contract.MeterSynthetic: the synthetic meter goes with the
// synthetic runner only, and measures the profile its jobs consume.
func (s *Synthetic) Meter() contract.Meter { return contract.MeterSynthetic }

// Start starts the job at Now.
func (s *Synthetic) Start(_ context.Context, a Assignment) (Job, error) {
	now := s.Now
	if now == nil {
		now = time.Now
	}
	j := &syntheticJob{
		now:     now,
		gpus:    len(a.GPUs),
		util:    decimal.NewFromInt(1),
		watts:   s.Watts,
		started: now(),
		done:    make(chan struct{}),
	}
	if j.watts.IsZero() {
		j.watts = decimal.NewFromInt(defaultWatts)
	}
	if a.Job != nil && a.Job.Profile != nil && a.Job.Profile.Duration > 0 {
		j.util, j.length = a.Job.Profile.Utilization, a.Job.Profile.Duration
		// On the wall clock a timer ends the job, so that Done tells at
		// once. On an injected clock (a test's, the simulator's) nothing
		// runs behind the caller's back: Measure ends the job once the
		// clock has passed Duration.
		if s.Now == nil {
			j.mu.Lock() // the timer may fire before it is stored
			//wallclock: only where no clock was given (s.Now == nil)
			j.timer = time.AfterFunc(j.length, func() { j.end(true) })
			j.mu.Unlock()
		}
	}
	return j, nil
}

type syntheticJob struct {
	now     func() time.Time
	gpus    int
	util    decimal.Decimal
	length  time.Duration // 0: until stopped
	watts   decimal.Decimal
	started time.Time
	done    chan struct{}

	mu       sync.Mutex
	timer    *time.Timer
	ended    bool
	stopped  time.Time // when Stop ended it; zero otherwise
	exitCode *int
}

// Done is closed when the job has ended. On an injected clock nothing
// ends the job behind the caller's back, so Done looks at the clock
// itself: a caller that asks at the moment the profile runs out (the
// simulator ticks the node then) sees it done without a measurement.
func (j *syntheticJob) Done() <-chan struct{} {
	if j.length > 0 {
		j.mu.Lock()
		if j.timer == nil && !j.ended && !j.now().Before(j.started.Add(j.length)) {
			j.endLocked(true)
		}
		j.mu.Unlock()
	}
	return j.done
}

func (j *syntheticJob) Stop(context.Context, contract.Reason) error {
	j.end(false)
	return nil
}

// end ends the job once: by itself (completed) or by Stop.
func (j *syntheticJob) end(completed bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.endLocked(completed)
}

func (j *syntheticJob) endLocked(completed bool) {
	if j.ended {
		return
	}
	j.ended = true
	if j.timer != nil {
		j.timer.Stop()
	}
	if completed {
		j.exitCode = new(int)
	} else {
		j.stopped = j.now()
	}
	close(j.done)
}

func (j *syntheticJob) Measure() (Measurement, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	var elapsed time.Duration
	switch {
	case j.exitCode != nil: // completed: it consumed its whole profile
		elapsed = j.length
	case j.ended:
		elapsed = j.stopped.Sub(j.started)
	default:
		elapsed = j.now().Sub(j.started)
		if j.length > 0 && elapsed >= j.length {
			j.endLocked(true)
		}
	}
	elapsed = max(elapsed, 0)
	m := syntheticUsage(j.gpus, j.util, j.length, elapsed, j.watts)
	m.ExitCode = j.exitCode
	return m, nil
}

// Forecast is the measurement after the job has run for elapsed: the
// synthetic meter's use is known ahead (Forecaster).
func (j *syntheticJob) Forecast(elapsed time.Duration) Measurement {
	return syntheticUsage(j.gpus, j.util, j.length, max(elapsed, 0), j.watts)
}

// Length is how long the job runs by itself: its profile's duration, 0
// for a job without one, which runs until stopped.
func (j *syntheticJob) Length() time.Duration { return j.length }

var _ Forecaster = (*syntheticJob)(nil)

// syntheticUsage is the meter of a job on g GPUs, each busy a fraction util
// of the time, that ends after length (0: never) and has run for elapsed:
// U = g·util·t and T = t, with t = elapsed capped at length, S = g, and
// energy = watts·U joules.
func syntheticUsage(g int, util decimal.Decimal, length, elapsed time.Duration, watts decimal.Decimal) Measurement {
	t := elapsed
	if length > 0 {
		t = min(t, length)
	}
	gd := decimal.NewFromInt(int64(g))
	u := gd.Mul(util).Mul(seconds(t))
	return Measurement{U: u, T: t, S: gd, EnergyJ: watts.Mul(u)}
}

// seconds converts a duration to decimal seconds, exactly.
func seconds(d time.Duration) decimal.Decimal { return decimal.New(int64(d), -9) }
