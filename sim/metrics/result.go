// Package metrics measures a simulated market: what each pricing policy
// earned, how busy it kept the GPUs, how long jobs waited, who got what
// and how fairly. A Collector hears the market's events; its Result is
// what the report prints and plots.
package metrics

import "github.com/bourse/bourse/sim/workload"

// Result is one run: a scenario under one policy and seed.
type Result struct {
	Scenario string  `json:"scenario"`
	Policy   string  `json:"policy"`
	Seed     uint64  `json:"seed"`
	Summary  Summary `json:"summary"`
	// Clients is each client's share, by client id.
	Clients []Client `json:"clients"`
	// Series samples the market at a fixed virtual interval.
	Series []Point `json:"series"`
	// Interrupted marks a run stopped before its end (bourse sim on
	// SIGINT or SIGTERM): its figures are those of the time it reached.
	Interrupted bool `json:"interrupted,omitempty"`
	// Trace, for a run that read a trace, says what became of its rows:
	// how many made jobs, and how many were dropped or skipped and why.
	Trace *workload.Rows `json:"trace,omitempty"`
	// Track, for a run asked for it (sim.Config.TrackEvery), is the run's
	// takings as its jobs arrived: a learner's regret against fixed
	// prices grows with them.
	Track []Mark `json:"track,omitempty"`
}

// Mark is a run's takings when its Jobs-th job arrived: the offers its
// clients had made, and the revenue and welfare of the contracts settled.
// Runs of one workload reach the same Jobs at the same virtual time.
type Mark struct {
	Jobs    int     `json:"jobs"`
	Offers  int     `json:"offers"`
	Revenue float64 `json:"revenue"`
	Welfare float64 `json:"welfare"`
}

// Summary is a run's headline figures. Money is in the scenario's
// currency, as a float for comparison; the exact decimals are in the
// contract log.
type Summary struct {
	Jobs           int `json:"jobs"`            // arrived
	Completed      int `json:"completed"`       // ran to their end
	Rejected       int `json:"rejected"`        // never got a contract
	NoMatch        int `json:"no_match"`        // rejected because no server has the GPUs they ask for
	Preempted      int `json:"preempted"`       // stopped for a dearer job
	DeadlineMisses int `json:"deadline_misses"` // done after their deadline, or never done
	Contracts      int `json:"contracts"`
	// Offers is how many offers the clients made (a counter-offer taken
	// counts as one; a waiting offer counts once, however long it waits).
	Offers int `json:"offers"`

	// Length is the run's length in virtual seconds: from the market's
	// opening to the last job's end, or to the run's limit.
	Length      float64 `json:"length_s"`
	Revenue     float64 `json:"revenue"`     // charged to clients
	Utilization float64 `json:"utilization"` // GPU-seconds used / GPU-seconds there were
	// Waits are from arrival to start; JCT from arrival to end, of
	// completed jobs, in seconds.
	WaitP50 float64 `json:"wait_p50_s"`
	WaitP99 float64 `json:"wait_p99_s"`
	JCTP50  float64 `json:"jct_p50_s"`
	JCTP99  float64 `json:"jct_p99_s"`
	// Surplus is the clients' value of what ran less what they paid;
	// Welfare is surplus plus revenue (the value of what ran).
	Surplus float64 `json:"surplus"`
	Welfare float64 `json:"welfare"`
	// PriceIndex is the average charge per GPU-second used.
	PriceIndex float64 `json:"price_index"`
	// ReserveIndex is what the servers' reserve prices would have charged
	// for the same use, per GPU-second used: each contract priced on its
	// final reading at the reserve its server posted when it accepted.
	// Contracts charge the clients' offered curves, which may be above it.
	ReserveIndex float64 `json:"reserve_index"`
	// Jain's index of GPU-seconds per client, and of GPU-seconds per unit
	// of each client's funding: 1 is perfectly even, 1/n all to one.
	JainGPU     float64 `json:"jain_gpu_seconds"`
	JainFunding float64 `json:"jain_per_funding"`
	// Finish-time fairness ρ = JCT / reference time over jobs that have
	// one: median and 99th percentile; 0 when no job has a reference.
	RhoP50 float64 `json:"rho_p50"`
	RhoP99 float64 `json:"rho_p99"`
	// Wall is how long the run took on the machine, in seconds; JobsPerSec
	// is Jobs/Wall. Not part of the deterministic output.
	Wall       float64 `json:"-"`
	JobsPerSec float64 `json:"-"`
}

// Client is one client's share of a run.
type Client struct {
	ID         string  `json:"id"`
	Funding    float64 `json:"funding"`
	Jobs       int     `json:"jobs"`
	Completed  int     `json:"completed"`
	GPUSeconds float64 `json:"gpu_seconds"`
	Paid       float64 `json:"paid"`
	Surplus    float64 `json:"surplus"`
}

// Point is the market at one moment of virtual time.
type Point struct {
	Hours       float64 `json:"hours"`       // since the run began
	Price       float64 `json:"price"`       // charge per GPU-second settled in the interval
	Utilization float64 `json:"utilization"` // GPUs busy / GPUs, averaged over the interval
	Running     int     `json:"running"`     // contracts running at the sample
	Queued      int     `json:"queued"`      // jobs arrived and not yet placed
	Arrivals    int     `json:"arrivals"`    // jobs that arrived in the interval
}
