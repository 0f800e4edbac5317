package sim

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/bourse/bourse/sim/metrics"
)

// Plan is one run of a comparison: a policy and a seed, and how to build
// its market. Build is called in the run's own goroutine, so each run
// reads its own workload; close, if not nil, is called when it is done.
type Plan struct {
	Policy string
	Seed   uint64
	Build  func() (cfg Config, close func() error, err error)
}

// Progress hears how the runs of RunAll go. The calls for one plan come
// from one goroutine, those for different plans from several.
type Progress interface {
	// Arrived says how many jobs have arrived in a plan's run so far,
	// every ProgressEvery.
	Arrived(plan, jobs int)
	// Finished says a plan's run has ended, after jobs arrivals (0 if it
	// failed).
	Finished(plan, jobs int)
}

// RunAll runs the plans on up to workers goroutines (all cores if zero),
// each market in one goroutine of its own, and returns their results in
// the plans' order whatever order they finish in: the same plans give the
// same results. progress, if set, hears each run's arrivals, from the
// runs' goroutines. The first error stops the runs not yet started and is
// returned.
//
// Once ctx is done the runs under way stop within a thousand events each
// and those not started never start: RunAll then returns what it has,
// the runs that ended and those cut off (Result.Interrupted), in the
// plans' order, with an error that wraps ErrInterrupted.
func RunAll(ctx context.Context, plans []Plan, workers int, progress Progress) ([]metrics.Result, error) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	stop := ctx
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	results := make([]metrics.Result, len(plans))
	ran := make([]bool, len(plans))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, len(plans)) {
		wg.Go(func() {
			for i := range next {
				r, err := runPlan(stop, plans[i], func(jobs int) {
					if progress != nil {
						progress.Arrived(i, jobs)
					}
				})
				if progress != nil {
					progress.Finished(i, r.Summary.Jobs)
				}
				if err != nil && !errors.Is(err, ErrInterrupted) {
					cancel(fmt.Errorf("sim: %s, seed %d: %w", plans[i].Policy, plans[i].Seed, err))
					continue
				}
				results[i], ran[i] = r, true
			}
		})
	}
feed:
	for i := range plans {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := stop.Err(); err != nil {
		var got []metrics.Result
		for i, r := range results {
			if ran[i] {
				got = append(got, r)
			}
		}
		return got, fmt.Errorf("%w: %d of %d runs ended or were cut off: %w", ErrInterrupted, len(got), len(plans), err)
	}
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	return results, nil
}

func runPlan(stop context.Context, p Plan, progress func(int)) (metrics.Result, error) {
	cfg, closeFn, err := p.Build()
	if err != nil {
		return metrics.Result{}, err
	}
	if closeFn != nil {
		defer closeFn()
	}
	cfg.Policy, cfg.Seed = p.Policy, p.Seed
	cfg.Progress = progress
	began := time.Now() //wallclock: the run's real duration, for jobs per second
	m, err := New(cfg)
	if err != nil {
		return metrics.Result{}, err
	}
	r, err := m.Run(stop)
	if err != nil && !errors.Is(err, ErrInterrupted) {
		return metrics.Result{}, err
	}
	r.Summary.Wall = time.Since(began).Seconds() //wallclock: the run's real duration, for jobs per second
	if r.Summary.Wall > 0 {
		r.Summary.JobsPerSec = float64(r.Summary.Jobs) / r.Summary.Wall
	}
	return r, err
}
