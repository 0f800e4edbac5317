package metrics

import (
	"cmp"
	"slices"
	"time"
)

// Collector hears what happens in a simulated market, one event at a
// time, in constant memory per client, and sums it up as a Result. It is
// not safe for concurrent use: a simulation runs in one goroutine.
type Collector struct {
	start    time.Time
	capacity int // GPUs in the market
	sample   time.Duration

	s       Summary
	clients map[string]*Client
	waits   Quantiles
	jcts    Quantiles
	rhos    Quantiles
	revenue float64
	used    float64 // GPU-seconds measured (U), settled
	reserve float64 // what the servers' reserves would have charged for it

	// The allocation integral: GPUs under contract over time.
	busy      int
	busySince time.Time
	allocated float64 // GPU-seconds allocated, up to busySince

	// The interval being sampled.
	series      []Point
	nextAt      time.Time
	allocAt     float64 // allocated at the interval's start
	intCharge   float64
	intUsed     float64
	intArrivals int
	lastPrice   float64
	track       []Mark
}

// NewCollector starts collecting at start for a market of capacity GPUs,
// sampling the series every sample (an hour if zero).
func NewCollector(start time.Time, capacity int, sample time.Duration) *Collector {
	if sample <= 0 {
		sample = time.Hour
	}
	return &Collector{start: start, capacity: capacity, sample: sample, clients: map[string]*Client{},
		busySince: start, nextAt: start.Add(sample)}
}

func (c *Collector) client(id string) *Client {
	k := c.clients[id]
	if k == nil {
		k = &Client{ID: id}
		c.clients[id] = k
	}
	return k
}

// Fund records a client's funding.
func (c *Collector) Fund(client string, amount float64) { c.client(client).Funding += amount }

// Arrive counts a job submitted.
func (c *Collector) Arrive(client string) {
	c.s.Jobs++
	c.client(client).Jobs++
	c.intArrivals++
}

// Reject counts a job that never got to run to its end: refused, or given
// up after waiting; missed says it had a deadline.
func (c *Collector) Reject(missed bool) {
	c.s.Rejected++
	if missed {
		c.s.DeadlineMisses++
	}
}

// NoMatch counts a job rejected because no server has the GPUs it asks
// for (their model and count): no price would have placed it. It is
// counted by Reject too.
func (c *Collector) NoMatch() { c.s.NoMatch++ }

// Preempt counts a job stopped for a dearer one.
func (c *Collector) Preempt() { c.s.Preempted++ }

// Contract counts a contract made.
func (c *Collector) Contract() { c.s.Contracts++ }

// Allocate and Release follow the GPUs under contract, for utilisation.
func (c *Collector) Allocate(at time.Time, gpus int) { c.integrate(at); c.busy += gpus }

// Release gives back GPUs allocated.
func (c *Collector) Release(at time.Time, gpus int) { c.integrate(at); c.busy -= gpus }

func (c *Collector) integrate(at time.Time) {
	if at.After(c.busySince) {
		c.allocated += float64(c.busy) * at.Sub(c.busySince).Seconds()
		c.busySince = at
	}
}

// Settle counts a contract's settlement: u GPU-seconds measured, charged,
// and worth value to its client (its value per GPU-second × u). Value is
// counted here, for every contract however it ended, and not when a job
// completes: a job preempted and never resumed paid for what ran and had
// the use of it, and surplus (value less payment) must see both sides.
func (c *Collector) Settle(client string, u, charge, value float64) {
	k := c.client(client)
	k.GPUSeconds += u
	k.Paid += charge
	k.Surplus += value - charge
	c.s.Welfare += value
	c.revenue += charge
	c.used += u
	c.intCharge += charge
	c.intUsed += u
}

// Reserve counts what a settled contract's server would have charged for
// the same use at its reserve price of the moment it accepted: beside
// revenue it says how much of the price was the clients' offers.
func (c *Collector) Reserve(due float64) { c.reserve += due }

// Complete counts a job run to its end: how long it waited from arrival to
// its first start and to its end, its reference time alone (zero if
// unknown) and whether it missed a deadline. Its value was counted as its
// contracts settled (Settle).
func (c *Collector) Complete(client string, wait, jct, reference time.Duration, missed bool) {
	c.s.Completed++
	c.client(client).Completed++
	c.waits.Add(wait.Seconds())
	c.jcts.Add(jct.Seconds())
	if reference > 0 {
		c.rhos.Add(jct.Seconds() / reference.Seconds())
	}
	if missed {
		c.s.DeadlineMisses++
	}
}

// Mark notes the takings so far, now that jobs have arrived and the
// clients have made offers (Result.Track).
func (c *Collector) Mark(jobs, offers int) {
	c.track = append(c.track, Mark{Jobs: jobs, Offers: offers, Revenue: c.revenue, Welfare: c.s.Welfare})
}

// Due is when the series wants its next sample.
func (c *Collector) Due() time.Time { return c.nextAt }

// Sample closes the series' interval ending at Due: running contracts and
// queued jobs as they are now.
func (c *Collector) Sample(running, queued int) {
	at := c.nextAt
	c.integrate(at)
	p := Point{Hours: at.Sub(c.start).Hours(), Running: running, Queued: queued, Price: c.lastPrice, Arrivals: c.intArrivals}
	if c.capacity > 0 {
		p.Utilization = (c.allocated - c.allocAt) / (float64(c.capacity) * c.sample.Seconds())
	}
	if c.intUsed > 0 {
		p.Price = c.intCharge / c.intUsed
		c.lastPrice = p.Price
	}
	c.series = append(c.series, p)
	c.allocAt, c.intCharge, c.intUsed, c.intArrivals = c.allocated, 0, 0, 0
	c.nextAt = at.Add(c.sample)
}

// Result sums the run up as it stands at end.
func (c *Collector) Result(end time.Time) Result {
	c.integrate(end)
	s := c.s
	s.Revenue = c.revenue
	s.Surplus = s.Welfare - c.revenue
	s.Length = end.Sub(c.start).Seconds()
	if span := s.Length; span > 0 && c.capacity > 0 {
		s.Utilization = c.allocated / (float64(c.capacity) * span)
	}
	if c.used > 0 {
		s.PriceIndex = c.revenue / c.used
		s.ReserveIndex = c.reserve / c.used
	}
	s.WaitP50, s.WaitP99 = c.waits.Quantile(0.5), c.waits.Quantile(0.99)
	s.JCTP50, s.JCTP99 = c.jcts.Quantile(0.5), c.jcts.Quantile(0.99)
	s.RhoP50, s.RhoP99 = c.rhos.Quantile(0.5), c.rhos.Quantile(0.99)
	// In order of id: float sums in map order would differ in the last
	// bits from run to run.
	var clients []Client
	for _, k := range c.clients {
		clients = append(clients, *k)
	}
	slices.SortFunc(clients, func(a, b Client) int { return cmp.Compare(a.ID, b.ID) })
	var gpu, perFunding []float64
	for _, k := range clients {
		if k.Jobs == 0 {
			continue
		}
		gpu = append(gpu, k.GPUSeconds)
		if k.Funding > 0 {
			perFunding = append(perFunding, k.GPUSeconds/k.Funding)
		}
	}
	s.JainGPU, s.JainFunding = Jain(gpu), Jain(perFunding)
	return Result{Summary: s, Clients: clients, Series: slices.Clone(c.series), Track: slices.Clone(c.track)}
}

// Jain is Jain's fairness index (Σx)²/(n·Σx²): 1 when every x is the same,
// 1/n when one has everything; 0 for no values or all zero.
func Jain(xs []float64) float64 {
	var sum, sq float64
	for _, x := range xs {
		sum += x
		sq += x * x
	}
	if sq == 0 {
		return 0
	}
	return sum * sum / (float64(len(xs)) * sq)
}
