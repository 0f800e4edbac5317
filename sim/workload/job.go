package workload

import "time"

// Job is one job of a workload: when it arrives, who submits it, what it
// asks for and how it runs.
type Job struct {
	ID     string
	Client string // who submits it: a trace's user, a generator's client
	// Arrival is when it is submitted, from the workload's start.
	Arrival time.Duration
	GPUs    int    // whole GPUs, at least 1
	Model   string // the GPU model it needs, "" for any
	// Duration is how long it runs once started, at full speed.
	Duration time.Duration
	// Utilization is the busy fraction of each of its GPUs, (0, 1]: a
	// trace's GPU share (Alibaba's gpu_milli/1000) or a generator's draw.
	Utilization float64
	// Deadline, if not zero, is how long after its arrival it must be done.
	Deadline    time.Duration
	Preemptible bool // best-effort work a guaranteed job may stop
	// Reference is its completion time alone on a cluster of its own
	// (a trace's run time), for finish-time fairness; zero if unknown.
	Reference time.Duration
}

// Source streams a workload's jobs in order of arrival. Next returns io.EOF
// after the last job; any other error names the line it came from.
type Source interface {
	Next() (Job, error)
}
