package nvmlmeter

import (
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/server"
)

// mode is how one GPU of a job is sampled; it only ever steps down, when
// NVML says a way is not supported.
type mode int

const (
	byProcess  mode = iota // the job's processes' SM utilisation
	byDevice               // the device's utilisation
	byPresence             // busy while the job has a process on it
)

// gauge measures one job on its GPUs.
type gauge struct {
	m    *Meter
	owns func(pid int) bool
	gpus []*track

	stop chan struct{} // closed by Stop to end the sampling loop
	done chan struct{} // closed when the loop has ended

	mu      sync.Mutex
	mine    map[uint32]bool // pids owns has answered for: a process keeps its answer after it exits
	u, e    decimal.Decimal
	missed  int // samples that failed, for the log
	stopped bool
}

// track is what a gauge remembers of one GPU between samples.
type track struct {
	dev      *device
	mode     mode
	lastSeen uint64    // the newest process sample's timestamp, µs
	lastAt   time.Time // when the last good sample was taken
	energy   uint64    // the counter at the last reading, mJ
	haveE    bool
	noEnergy bool // not supported, or a MIG slice: the counter is the whole device's
}

// Track starts sampling the job's GPUs every Interval. owns tells the
// job's processes; with nil, or with Config.Device, whole devices are
// measured.
func (m *Meter) Track(gpus []contract.GPU, owns func(pid int) bool) (server.Gauge, error) {
	g, err := m.track(gpus, owns, m.cfg.Now())
	if err != nil {
		return nil, err
	}
	go g.loop()
	return g, nil
}

// track builds the gauge and takes its baseline at now, without starting
// the loop: tests drive sample themselves.
func (m *Meter) track(gpus []contract.GPU, owns func(pid int) bool, now time.Time) (*gauge, error) {
	g := &gauge{m: m, owns: owns, mine: map[uint32]bool{}, u: decimal.Zero, e: decimal.Zero,
		stop: make(chan struct{}), done: make(chan struct{})}
	for _, gpu := range gpus {
		d, ok := m.devices[gpu.Index]
		if !ok {
			return nil, bourse.Errorf(bourse.EInvalid, "nvmlmeter.Track", "GPU %d is not one NVML found", gpu.Index)
		}
		t := &track{dev: d, lastAt: now, lastSeen: uint64(now.UnixMicro()), noEnergy: d.mig}
		if owns == nil || m.cfg.Device {
			t.mode = byDevice
		}
		g.gpus = append(g.gpus, t)
	}
	g.mu.Lock()
	for _, t := range g.gpus {
		g.readEnergy(t) // the baseline
	}
	g.mu.Unlock()
	return g, nil
}

func (g *gauge) loop() {
	defer close(g.done)
	tick := time.NewTicker(g.m.cfg.Interval) //wallclock: pacing: NVML is sampled in real time
	defer tick.Stop()
	for {
		select {
		case <-g.stop:
			return
		case <-tick.C:
			g.sample(g.m.cfg.Now())
		}
	}
}

func (g *gauge) Read() (u, energyJ decimal.Decimal) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.u, g.e
}

func (g *gauge) Stop() {
	g.mu.Lock()
	if g.stopped {
		g.mu.Unlock()
		return
	}
	g.mu.Unlock()
	close(g.stop)
	<-g.done
	g.sample(g.m.cfg.Now())
	g.mu.Lock()
	g.stopped = true
	if g.missed > 0 {
		g.m.log.Warn("NVML samples missed; their time went to the next", "missed", g.missed)
	}
	g.mu.Unlock()
}

// sample adds each GPU's use since its last good sample, and the energy
// drawn since the last reading. A stopped gauge samples no more.
func (g *gauge) sample(now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return
	}
	for _, t := range g.gpus {
		g.readEnergy(t)
		busy, ok := g.busy(t)
		if !ok {
			g.missed++
			continue // lastAt stays: the next good sample covers this one's time
		}
		if dt := now.Sub(t.lastAt); dt > 0 {
			g.u = g.u.Add(busy.Mul(decimal.New(int64(dt), -9)))
		}
		t.lastAt = now
	}
}

// busy is the fraction of the time since t.lastAt that the GPU worked for
// the job, 0..1, or false when NVML could not say.
func (g *gauge) busy(t *track) (decimal.Decimal, bool) {
	h := t.dev.handle
	if t.mode == byProcess {
		samples, ret := h.GetProcessUtilization(t.lastSeen)
		switch ret {
		case nvml.SUCCESS:
			return g.processBusy(t, samples), true
		case nvml.ERROR_NOT_FOUND: // no samples since lastSeen: nothing ran
			return decimal.Zero, true
		case nvml.ERROR_NOT_SUPPORTED:
			t.mode = byDevice
		default:
			return decimal.Zero, false
		}
	}
	if t.mode == byDevice {
		u, ret := h.GetUtilizationRates()
		switch ret {
		case nvml.SUCCESS:
			return decimal.New(int64(min(u.Gpu, 100)), -2), true
		case nvml.ERROR_NOT_SUPPORTED:
			t.mode = byPresence
		default:
			return decimal.Zero, false
		}
	}
	procs, ret := h.GetComputeRunningProcesses()
	if ret != nvml.SUCCESS {
		return decimal.Zero, false
	}
	for _, p := range procs {
		if g.isMine(p.Pid) {
			return decimal.NewFromInt(1), true
		}
	}
	return decimal.Zero, true
}

// processBusy averages the job's SM utilisation over the sampling
// instants newer than lastSeen: at each instant the job's processes' SM
// percentages add up (to at most 100), and an instant at which only other
// processes were sampled counts as 0 for the job. It advances lastSeen.
func (g *gauge) processBusy(t *track, samples []nvml.ProcessUtilizationSample) decimal.Decimal {
	at := map[uint64]uint32{} // instant → the job's SM %
	newest := t.lastSeen
	for _, s := range samples {
		if s.TimeStamp <= t.lastSeen {
			continue // seen already
		}
		newest = max(newest, s.TimeStamp)
		pct := at[s.TimeStamp]
		if g.isMine(s.Pid) {
			pct = min(pct+s.SmUtil, 100)
		}
		at[s.TimeStamp] = pct
	}
	t.lastSeen = newest
	if len(at) == 0 {
		return decimal.Zero
	}
	var sum int64
	for _, pct := range at {
		sum += int64(pct)
	}
	return decimal.NewFromInt(sum).DivRound(decimal.NewFromInt(100*int64(len(at))), 12)
}

// isMine asks owns once per pid: a process sampled while it ran stays the
// job's after it exits. g.mu is held.
func (g *gauge) isMine(pid uint32) bool {
	if g.owns == nil {
		return true
	}
	mine, ok := g.mine[pid]
	if !ok {
		mine = g.owns(int(pid))
		g.mine[pid] = mine
	}
	return mine
}

// readEnergy adds the rise of the device's energy counter since the last
// reading; a counter lower than before has restarted from zero, so all of
// it is new. g.mu is held.
func (g *gauge) readEnergy(t *track) {
	if t.noEnergy {
		return
	}
	mj, ret := t.dev.handle.GetTotalEnergyConsumption()
	switch ret {
	case nvml.SUCCESS:
	case nvml.ERROR_NOT_SUPPORTED:
		t.noEnergy = true
		return
	default:
		return // the counter is cumulative: the next reading catches up
	}
	if t.haveE {
		rise := mj
		if mj >= t.energy {
			rise = mj - t.energy
		}
		g.e = g.e.Add(decimal.New(int64(rise), -3))
	}
	t.energy, t.haveE = mj, true
}
