package server

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/trade"
)

// recentMax is how many started contracts State.Recent remembers.
const recentMax = 16

// run is a started contract's job and what the agent knows of it.
type run struct {
	id      string
	terms   contract.Terms
	started protocol.Started
	job     Job

	// ctx is cancelled by halt; it also interrupts a reading's retries,
	// so that a stop takes effect at once.
	ctx    context.Context
	cancel context.CancelFunc
	once   sync.Once
	reason trade.Reason // set by halt, before ctx is cancelled

	// Guarded by the agent's mu.
	claimed   string // the offer whose hold took GPUs of this run, to preempt it
	ended     bool   // the job has stopped and its GPUs are free
	booked    bool   // its end is in the agent's clientBook
	endedAt   time.Time
	published bool // the final reading is out, or given up on
}

// halt asks the run to stop for reason; the first reason wins.
func (r *run) halt(reason trade.Reason) {
	r.once.Do(func() {
		r.reason = reason
		r.cancel()
	})
}

// onStart starts an accepted contract's job and answers protocol.Started,
// or an error reply. The start subscription delivers one message at a time,
// so two starts of one contract never race.
func (a *Agent) onStart(m *nats.Msg) {
	var s protocol.Start
	if err := decode(m, &s); err != nil {
		a.respondError(m, err)
		return
	}
	started, err := a.start(s)
	if err != nil {
		a.log.Warn("start", "contract", s.Contract.ID, "offer", s.Offer, "err", err)
		a.respondError(m, err)
		return
	}
	a.respond(m, started)
}

func (a *Agent) start(s protocol.Start) (protocol.Started, error) {
	const op = "server.start"
	id, t := s.Contract.ID, s.Contract.Terms
	if err := protocol.CheckID(id); err != nil {
		return protocol.Started{}, &bourse.Error{Code: bourse.EInvalid, Op: op, Field: "contract.id", Err: err}
	}
	if started, ok, err := a.confirmBooking(s); ok {
		return started, err
	}
	gpus, victims, already, err := a.claim(s)
	switch {
	case err != nil:
		return protocol.Started{}, err
	case already != nil:
		return *already, nil
	}
	return a.launch(id, t, s.Contract.Resumes, gpus, victims)
}

// launch starts a contract's job on gpus, which are the contract's in
// a.owner, once the victims' jobs have stopped.
func (a *Agent) launch(id string, t contract.Terms, resumes string, gpus []int, victims []*run) (protocol.Started, error) {
	const op = "server.start"
	var err error
	assigned := make([]trade.GPU, 0, len(gpus))
	for _, g := range a.cfg.GPUs {
		if slices.Contains(gpus, g.Index) {
			assigned = append(assigned, g)
		}
	}
	var job Job
	if err = a.preempt(victims); err == nil {
		job, err = a.runner.Start(a.runCtx, Assignment{Contract: id, Job: t.Job, GPUs: assigned,
			TimeLimit: t.TimeLimit, Resumes: resumes})
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if err == nil && a.closing {
		// Shutdown has already collected the runs to stop; this one would
		// be missed, so it ends before it is reported started.
		if serr := job.Stop(a.runCtx, trade.ReasonShutdown); serr != nil {
			a.log.Warn("stop", "contract", id, "err", serr)
		}
		err = bourse.Errorf(bourse.EUnavailable, op, "the server is shutting down")
	}
	if err != nil {
		for _, i := range gpus {
			delete(a.owner, i)
			a.freeValid = false
		}
		return protocol.Started{}, fmt.Errorf("start contract %s: %w", id, err)
	}
	r := &run{id: id, terms: t, job: job,
		started: protocol.Started{Contract: id, GPUs: gpus, At: a.now()}}
	r.ctx, r.cancel = context.WithCancel(a.runCtx)
	a.runs[id] = r
	a.active[id] = r
	a.recent = append(a.recent, t)
	a.clients.started(t.Client, r.started.At)
	if len(a.recent) > recentMax {
		a.recent = a.recent[len(a.recent)-recentMax:]
	}
	a.jobs.Add(1)
	go a.watch(r)
	a.log.Info("started", "contract", id, "client", t.Client, "gpus", gpus)
	return r.started, nil
}

// preemptWait bounds how long a start waits for the jobs it preempts to
// stop.
const preemptWait = 10 * time.Second

// preempt stops the runs with reason preempted and waits until their jobs
// have ended, so that their GPUs are free for the job that took them.
// Their final readings settle them.
func (a *Agent) preempt(victims []*run) error {
	for _, r := range victims {
		r.halt(trade.ReasonPreempted)
	}
	timeout := time.NewTimer(preemptWait)
	defer timeout.Stop()
	for _, r := range victims {
		select {
		case <-r.job.Done():
			a.log.Info("preempted", "contract", r.id)
		case <-timeout.C:
			return bourse.Errorf(bourse.EUnavailable, "server.start", "preempted contract %s did not stop within %v", r.id, preemptWait)
		}
	}
	return nil
}

// claim turns the offer's hold into the contract's GPUs, or takes free ones
// when the hold has lapsed; victims are the runs the hold preempts. For a
// contract started already it returns the Started it answered then.
func (a *Agent) claim(s protocol.Start) (gpus []int, victims []*run, already *protocol.Started, err error) {
	const op = "server.start"
	id, t := s.Contract.ID, s.Contract.Terms
	a.mu.Lock()
	defer a.mu.Unlock()
	if r, ok := a.runs[id]; ok {
		return nil, nil, &r.started, nil
	}
	if a.closing {
		return nil, nil, nil, bourse.Errorf(bourse.EUnavailable, op, "the server is shutting down")
	}
	if err := contract.Validate(t, a.scaleOf); err != nil {
		return nil, nil, nil, err
	}
	a.sweep(a.now())
	if h, ok := a.holds[s.Offer]; ok && len(h.gpus) == t.GPUs && h.terms.Class == t.Class {
		gpus, victims = h.gpus, h.preempt
		delete(a.holds, s.Offer)
	} else {
		a.release(s.Offer)
		if gpus = a.pickFor(t, a.now()); gpus == nil {
			return nil, nil, nil, bourse.Errorf(bourse.ECapacityGone, op, "the reservation lapsed and %d GPUs of the class are not free", t.GPUs)
		}
	}
	for _, i := range gpus {
		a.owner[i] = "run " + id
		a.freeValid = false
	}
	return gpus, victims, nil, nil
}

// onControl stops a contract's job for the client (suspended or killed)
// and answers {}; the final reading follows. Stopping a stopped contract
// answers {} again.
func (a *Agent) onControl(m *nats.Msg) {
	const op = "server.control"
	var c protocol.Control
	if err := decode(m, &c); err != nil {
		a.respondError(m, err)
		return
	}
	if c.Action != trade.ReasonSuspended && c.Action != trade.ReasonKilled {
		a.respondError(m, bourse.Errorf(bourse.EInvalid, op, "action %q; want %q or %q", c.Action, trade.ReasonSuspended, trade.ReasonKilled))
		return
	}
	if a.cancelBooking(c.Contract, c.Action) {
		a.respond(m, struct{}{})
		return
	}
	a.mu.Lock()
	r, ok := a.runs[c.Contract]
	a.mu.Unlock()
	if !ok {
		a.respondError(m, bourse.Errorf(bourse.ENotFound, op, "no contract %q runs here", c.Contract))
		return
	}
	r.halt(c.Action)
	a.respond(m, struct{}{})
}
