package workload

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
)

// GeneratorSpec is a made-up workload: how jobs arrive, how long they
// run, and what they ask for. The zero values of the optional parts are
// one GPU of any model, fully busy, no deadline, not preemptible.
type GeneratorSpec struct {
	Arrivals  ArrivalSpec  `yaml:"arrivals" json:"arrivals"`
	Durations DurationSpec `yaml:"durations" json:"durations"`
	// GPUs weighs whole-GPU counts, e.g. {1: 0.6, 2: 0.2, 4: 0.15, 8: 0.05}.
	GPUs map[int]float64 `yaml:"gpus,omitempty" json:"gpus,omitempty"`
	// Models weighs GPU models; "" is any model.
	Models map[string]float64 `yaml:"models,omitempty" json:"models,omitempty"`
	// Utilization is drawn uniformly from [Lo, Hi] and rounded to a
	// thousandth (Alibaba's gpu_milli); both 1 if unset.
	Utilization Range        `yaml:"utilization,omitempty" json:"utilization,omitempty"`
	Deadlines   DeadlineSpec `yaml:"deadlines,omitempty" json:"deadlines,omitempty"`
	// Preemptible is the fraction of jobs that are best-effort.
	Preemptible float64 `yaml:"preemptible,omitempty" json:"preemptible,omitempty"`
	// Clients weighs who submits each job; at least one is needed.
	Clients map[string]float64 `yaml:"clients" json:"clients"`
}

// Range is a closed interval [Lo, Hi].
type Range struct {
	Lo float64 `yaml:"lo" json:"lo"`
	Hi float64 `yaml:"hi" json:"hi"`
}

// DeadlineSpec gives a fraction P of jobs a deadline of slack × their run
// time, the slack drawn uniformly from [Slack[0], Slack[1]]; a slack
// below 1 would be a deadline no job could meet.
type DeadlineSpec struct {
	P     float64    `yaml:"p" json:"p"`
	Slack [2]float64 `yaml:"slack" json:"slack"`
}

// The PCG stream of each concern. Do not reorder or reuse: each number
// names the draws of every workload made with it.
const (
	streamArrivals uint64 = iota + 1
	streamDurations
	streamGPUs
	streamModels
	streamUtilization
	streamDeadlines
	streamPreemptible
	streamClients
)

// Validate says which field is wrong, by its path from the generator.
func (g GeneratorSpec) Validate() error {
	if err := g.Arrivals.Validate(); err != nil {
		return under("arrivals", err)
	}
	if err := g.Durations.Validate(); err != nil {
		return under("durations", err)
	}
	if len(g.GPUs) > 0 {
		if err := checkWeights(g.GPUs); err != nil {
			return under("gpus", err)
		}
		for n := range g.GPUs {
			if n < 1 || n > MaxJobGPUs {
				return fieldErr("gpus."+strconv.Itoa(n), "a job needs 1 to %d GPUs", MaxJobGPUs)
			}
		}
	}
	if len(g.Models) > 0 {
		if err := checkWeights(g.Models); err != nil {
			return under("models", err)
		}
	}
	if u := g.Utilization; u != (Range{}) {
		if !(u.Lo > 0 && u.Lo <= u.Hi && u.Hi <= 1) { // false for NaN too
			return fieldErr("utilization", "needs 0 < lo ≤ hi ≤ 1, is [%v, %v]", u.Lo, u.Hi)
		}
	}
	if err := g.Deadlines.validate(); err != nil {
		return under("deadlines", err)
	}
	if !fraction(g.Preemptible) {
		return fieldErr("preemptible", "must be a fraction in [0, 1], is %v", g.Preemptible)
	}
	if len(g.Clients) == 0 {
		return fieldErr("clients", "name at least one client, with a weight: {ada: 1}")
	}
	return under("clients", checkWeights(g.Clients))
}

func (d DeadlineSpec) validate() error {
	if !fraction(d.P) {
		return fieldErr("p", "must be a fraction in [0, 1], is %v", d.P)
	}
	if d.P == 0 {
		return nil
	}
	lo, hi := d.Slack[0], d.Slack[1]
	if !(lo >= 1 && lo <= hi && hi <= MaxSlack) {
		return fieldErr("slack", "needs [lo, hi] with 1 ≤ lo ≤ hi ≤ %v, is [%v, %v]", MaxSlack, lo, hi)
	}
	return nil
}

func fraction(p float64) bool { return p >= 0 && p <= 1 }

// Generator is a Source of made-up jobs, drawn from a GeneratorSpec and a
// seed. It never ends by itself (wrap it in Limit) and holds nothing per
// job: ten million jobs cost what ten do.
type Generator struct {
	arrivals  arrivals
	durations durations
	gpus      weighted[int]
	models    weighted[string]
	clients   weighted[string]
	util      Range
	deadlines DeadlineSpec
	preempt   float64

	rArrivals, rDurations, rGPUs, rModels, rUtil, rDeadlines, rPreempt, rClients *rand.Rand

	n  int
	id []byte
}

// NewGenerator makes the generator of a spec and seed: the same pair
// gives the same jobs, on any machine. (Products are kept from fusing
// into multiply-adds, which would round otherwise on some machines; what
// is left, math.Exp and math.Pow differing in the last bit between
// architectures, the rounding of times to the millisecond hides in all
// but one draw in billions.)
func NewGenerator(spec GeneratorSpec, seed uint64) (*Generator, error) {
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("workload: generator: %w", err)
	}
	ds, err := newDurations(spec.Durations)
	if err != nil {
		return nil, fmt.Errorf("workload: generator: %w", err)
	}
	gpus, models := spec.GPUs, spec.Models
	if len(gpus) == 0 {
		gpus = map[int]float64{1: 1}
	}
	if len(models) == 0 {
		models = map[string]float64{"": 1}
	}
	util := spec.Utilization
	if util == (Range{}) {
		util = Range{1, 1}
	}
	stream := func(s uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, s)) }
	return &Generator{
		arrivals:  arrivals{spec: spec.Arrivals},
		durations: ds,
		gpus:      newWeighted(gpus),
		models:    newWeighted(models),
		clients:   newWeighted(spec.Clients),
		util:      util,
		deadlines: spec.Deadlines,
		preempt:   spec.Preemptible,

		rArrivals:  stream(streamArrivals),
		rDurations: stream(streamDurations),
		rGPUs:      stream(streamGPUs),
		rModels:    stream(streamModels),
		rUtil:      stream(streamUtilization),
		rDeadlines: stream(streamDeadlines),
		rPreempt:   stream(streamPreemptible),
		rClients:   stream(streamClients),
		id:         make([]byte, 0, 24),
	}, nil
}

// Next makes the next job. It returns io.EOF only once arrivals would be
// past what a time.Duration holds.
func (g *Generator) Next() (Job, error) {
	at, ok := g.arrivals.next(g.rArrivals)
	if !ok {
		return Job{}, io.EOF
	}
	g.n++
	d := g.durations.draw(g.rDurations)
	j := Job{
		ID:          g.nextID(),
		Client:      g.clients.pick(g.rClients),
		Arrival:     at,
		GPUs:        g.gpus.pick(g.rGPUs),
		Model:       g.models.pick(g.rModels),
		Duration:    d,
		Utilization: g.utilization(),
		Preemptible: g.rPreempt.Float64() < g.preempt,
		Reference:   d,
	}
	if g.rDeadlines.Float64() < g.deadlines.P {
		lo, hi := g.deadlines.Slack[0], g.deadlines.Slack[1]
		slack := lo + float64((hi-lo)*g.rDeadlines.Float64()) // unfused, as in arrivals.spell
		j.Deadline = max(roundMilli(slack*float64(d)), d)
	}
	return j, nil
}

// nextID is "j" and the job's number, six digits at least, so that a
// sample's IDs sort as they arrive; the only allocation of a job.
func (g *Generator) nextID() string {
	b := append(g.id[:0], 'j')
	for p := 100000; p > 1 && g.n < p; p /= 10 {
		b = append(b, '0')
	}
	b = strconv.AppendInt(b, int64(g.n), 10)
	g.id = b
	return string(b)
}

func (g *Generator) utilization() float64 {
	u := g.util.Lo + float64((g.util.Hi-g.util.Lo)*g.rUtil.Float64()) // unfused, as in arrivals.spell
	return min(max(math.Round(u*1000)/1000, 0.001), 1)
}

// Made is how many jobs it has made.
func (g *Generator) Made() int { return g.n }

var _ Source = (*Generator)(nil)
