package workload

import (
	"io"
	"math"
	"time"
)

// Limit stops src after jobs jobs (none if 0) and before the first job
// that arrives at or after horizon (none if 0): a workload's [0, horizon).
func Limit(src Source, jobs int, horizon time.Duration) Source {
	return &limited{src: src, jobs: jobs, horizon: horizon}
}

type limited struct {
	src     Source
	jobs    int
	horizon time.Duration
	n       int
	done    bool
}

func (l *limited) Next() (Job, error) {
	if l.done || (l.jobs > 0 && l.n >= l.jobs) {
		return Job{}, io.EOF
	}
	j, err := l.src.Next()
	if err != nil {
		return Job{}, err
	}
	if l.horizon > 0 && j.Arrival >= l.horizon {
		// Arrivals only go forward: nothing after this is inside either.
		l.done = true
		return Job{}, io.EOF
	}
	l.n++
	return j, nil
}

// scaled multiplies every time of src's jobs by f: 0.5 replays a trace
// twice as fast, load and all.
type scaled struct {
	src Source
	f   float64
}

func (s scaled) Next() (Job, error) {
	j, err := s.src.Next()
	if err != nil {
		return j, err
	}
	j.Arrival = scale(j.Arrival, s.f)
	j.Duration = max(scale(j.Duration, s.f), time.Millisecond)
	j.Deadline = scale(j.Deadline, s.f)
	j.Reference = scale(j.Reference, s.f)
	return j, nil
}

// scale multiplies a time by f to the millisecond, at most the longest
// Duration.
func scale(d time.Duration, f float64) time.Duration {
	if d == 0 {
		return 0
	}
	x := float64(d) * f
	if x >= math.MaxInt64 {
		return math.MaxInt64
	}
	return roundMilli(x)
}
