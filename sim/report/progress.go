package report

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// ProgressConfig says how a Progress reports. Its zero value logs a line
// every ten seconds against the wall clock, which is what a CI log wants.
type ProgressConfig struct {
	// Terminal draws a live bar per run; otherwise Progress writes
	// periodic log lines, since redrawn bars make a mess of a log file.
	// IsTerminal tells which the writer is.
	Terminal bool
	// Every is how often a log line is written; 0 means 10s. A bar on a
	// terminal redraws on its own schedule.
	Every time.Duration
	// Now is the clock for rates and ETAs, and stamps log lines; nil
	// means time.Now. Progress measures the machine, not the simulation,
	// so wall time is the right clock here: a test injects one to get
	// the same lines every time.
	Now func() time.Time
}

// Progress reports how far long simulations have got: jobs done out of
// jobs expected, jobs per second and time left, one Bar per run.
type Progress struct {
	now   func() time.Time
	log   slog.Handler  // when not on a terminal
	bars  *mpb.Progress // when on a terminal
	start time.Time

	mu      sync.Mutex
	all     []*Bar
	running sync.WaitGroup // bars not yet Done
	stop    chan struct{}
	stopped chan struct{}
}

// barRefresh is how often counts reach the terminal bars; mpb itself
// redraws at about this rate, so more often would be wasted.
const barRefresh = 150 * time.Millisecond

// NewProgress starts reporting to w. Make every Bar, then call Wait.
func NewProgress(w io.Writer, cfg ProgressConfig) *Progress {
	p := &Progress{
		now:     cfg.Now,
		stop:    make(chan struct{}),
		stopped: make(chan struct{}),
	}
	if p.now == nil {
		p.now = time.Now
	}
	p.start = p.now()
	every := cfg.Every
	if cfg.Terminal {
		p.bars = mpb.New(mpb.WithOutput(w), mpb.WithAutoRefresh())
		every = barRefresh
	} else {
		p.log = slog.NewTextHandler(w, nil)
		if every <= 0 {
			every = 10 * time.Second
		}
	}
	go p.tick(every)
	return p
}

// Bar is one run's progress. Add and Done are safe to call from any
// goroutine.
type Bar struct {
	p     *Progress
	name  string
	total int64
	start time.Time
	done  atomic.Int64
	over  atomic.Bool
	bar   *mpb.Bar // on a terminal

	// drawing orders what reaches the mpb bar: a refresh that read the
	// count before Done must not land after it, or the bar would go back
	// below its total and never complete.
	drawing sync.Mutex
}

// Bar adds a run called name that expects total jobs; 0 if unknown.
func (p *Progress) Bar(name string, total int64) *Bar {
	b := &Bar{p: p, name: name, total: total, start: p.now()}
	if p.bars != nil {
		// The bar starts with no total and is given one after: mpb ends a
		// bar made with a total only when it reaches it, and a run that
		// stops early would then leave Wait waiting forever.
		b.bar = p.bars.AddBar(0,
			mpb.PrependDecorators(
				decor.Name(name, decor.WCSyncSpaceR),
				decor.CountersNoUnit("%d / %d", decor.WCSyncWidth),
			),
			mpb.AppendDecorators(
				decor.NewAverageSpeed(0, "%.0f jobs/s", b.start, decor.WCSyncSpace),
				decor.OnComplete(decor.NewAverageETA(decor.ET_STYLE_GO, b.start, nil, decor.WCSyncSpace), "done"),
			),
		)
		if total > 0 {
			b.bar.SetTotal(total, false)
		}
	}
	p.mu.Lock()
	p.all = append(p.all, b)
	p.mu.Unlock()
	p.running.Add(1)
	return b
}

// Add counts n more jobs done. It is an atomic add and nothing else, so
// a simulation can call it for every job: the count reaches the screen
// or the log on the reporter's own schedule, not on the simulation's.
func (b *Bar) Add(n int) {
	b.done.Add(int64(n))
}

// Done ends the run, whether or not it reached its total: a run can end
// early when its scenario's horizon comes before its last job.
func (b *Bar) Done() {
	b.drawing.Lock()
	defer b.drawing.Unlock()
	if b.over.Swap(true) {
		return
	}
	n := b.done.Load()
	if b.bar != nil {
		b.bar.SetCurrent(n)
		b.bar.SetTotal(-1, true)
	} else {
		elapsed := b.p.now().Sub(b.start)
		b.p.line("run done",
			slog.String("run", b.name),
			slog.Int64("jobs", n),
			slog.String("took", duration(elapsed.Seconds())),
			slog.String("rate", rate(n, elapsed)),
		)
	}
	b.p.running.Done()
}

// Flush reports now: on a terminal it brings the bars up to date,
// otherwise it logs one line for all runs together. Progress calls it
// periodically; tests call it directly.
func (p *Progress) Flush() {
	p.mu.Lock()
	bars := append([]*Bar(nil), p.all...)
	p.mu.Unlock()
	if p.bars != nil {
		for _, b := range bars {
			b.draw()
		}
		return
	}
	var done, total int64
	finished, unknown := 0, false
	for _, b := range bars {
		n := b.done.Load()
		done += n
		if b.over.Load() {
			finished++
			total += n // a run that ended early expects no more
			continue
		}
		total += max(b.total, n)
		unknown = unknown || b.total <= 0
	}
	elapsed := p.now().Sub(p.start)
	eta := "unknown"
	if done > 0 && !unknown {
		left := elapsed.Seconds() * float64(total-done) / float64(done)
		eta = duration(left)
	}
	pct := "0.0%"
	if total > 0 {
		pct = percent(float64(done) / float64(total))
	}
	p.line("progress",
		slog.Int64("done", done),
		slog.Int64("total", total),
		slog.String("pct", pct),
		slog.String("runs", fmt.Sprintf("%d/%d", finished, len(bars))),
		slog.String("rate", rate(done, elapsed)),
		slog.String("eta", eta),
	)
}

// draw brings a terminal bar up to date, unless it is over.
func (b *Bar) draw() {
	b.drawing.Lock()
	defer b.drawing.Unlock()
	if !b.over.Load() {
		b.bar.SetCurrent(b.done.Load())
	}
}

// Wait returns once every Bar is Done and the last report is out.
func (p *Progress) Wait() {
	p.running.Wait()
	close(p.stop)
	<-p.stopped
	if p.bars != nil {
		p.bars.Wait()
		return
	}
	p.Flush()
}

func (p *Progress) tick(every time.Duration) {
	defer close(p.stopped)
	t := time.NewTicker(every) //wallclock: pacing: redraws the bar in real time
	defer t.Stop()
	for {
		select {
		case <-t.C:
			p.Flush()
		case <-p.stop:
			return
		}
	}
}

// line logs msg stamped by the injected clock rather than slog's own, so
// that a test's lines are the same every time.
func (p *Progress) line(msg string, attrs ...slog.Attr) {
	r := slog.NewRecord(p.now(), slog.LevelInfo, msg, 0)
	r.AddAttrs(attrs...)
	// A progress line that cannot be written is not worth stopping a
	// simulation for; the results are what matter.
	_ = p.log.Handle(context.Background(), r)
}

// rate is jobs per second over elapsed, rounded for reading.
func rate(n int64, elapsed time.Duration) string {
	if elapsed <= 0 {
		return "unknown"
	}
	return fmt.Sprintf("%.0f jobs/s", float64(n)/elapsed.Seconds())
}
