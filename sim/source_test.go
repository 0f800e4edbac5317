package sim_test

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"time"

	"github.com/bourse/bourse/scenario"
	"github.com/bourse/bourse/sim/workload"
)

// demoJobs is a workload for the demo's clients: n jobs arriving about
// every `gap`, each running 1–10 minutes on 1–4 GPUs of the client's model.
type demoJobs struct {
	rng     *rand.Rand
	clients []scenario.ClientSpec
	n, made int
	gap     time.Duration
	at      time.Duration
}

func newDemoJobs(seed uint64, n int, gap time.Duration) *demoJobs {
	return &demoJobs{rng: rand.New(rand.NewPCG(seed, 99)), clients: scenario.DefaultClients(), n: n, gap: gap}
}

func (d *demoJobs) Next() (workload.Job, error) {
	if d.made == d.n {
		return workload.Job{}, io.EOF
	}
	d.made++
	d.at += time.Duration(-math.Log(1-d.rng.Float64()) * float64(d.gap)).Round(time.Millisecond)
	c := d.clients[d.rng.IntN(len(d.clients))]
	run := time.Duration(60+d.rng.IntN(540)) * time.Second
	j := workload.Job{ID: fmt.Sprintf("j%d", d.made), Client: c.ID, Arrival: d.at, GPUs: 1 + d.rng.IntN(c.MaxGPUs),
		Model: c.Model, Duration: run, Utilization: 0.5 + d.rng.Float64()/2, Reference: run}
	if d.rng.IntN(4) == 0 {
		j.Deadline = 3 * run
	}
	j.Preemptible = d.rng.IntN(5) == 0
	return j, nil
}

// jobList is a workload written out.
type jobList struct {
	jobs []workload.Job
	i    int
}

func (l *jobList) Next() (workload.Job, error) {
	if l.i == len(l.jobs) {
		return workload.Job{}, io.EOF
	}
	l.i++
	return l.jobs[l.i-1], nil
}
