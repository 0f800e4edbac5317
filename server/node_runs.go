package server

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// recentMax is how many started contracts View.Recent remembers.
const recentMax = 16

// run is a started contract's job and what the node knows of it. All its
// fields are guarded by the node's mu.
type run struct {
	id      string
	terms   contract.Terms
	resumes string
	started protocol.Started
	job     Job    // nil until Launch
	victims []*run // the runs it preempts, which must end before Launch
	// preparing says the driver prepares the job before Launch (its
	// start was answered Preparing): a start again is answered so.
	preparing bool

	halting  contract.Reason // why the job must stop; the first reason wins
	stopping bool            // handed to the driver to stop (Due.Stops)
	claimed  string          // the offer whose claim took GPUs of this run, to preempt it
	seq      uint64          // the last reading's sequence number
	next     time.Time       // when its next reading is due
	ends     time.Time       // when its job ends by itself, if it forecasts (Forecaster)
	exhausts time.Time       // when its prepayment runs out, if it forecasts and does
	last     Measurement     // the last good measurement
	ended    bool            // the job has stopped and its GPUs are free
	counted  bool            // its end has been counted in the node's clientBook
	endedAt  time.Time
}

// stop asks the run to stop for reason; the first reason wins.
func (r *run) stop(reason contract.Reason) {
	if r.halting == "" {
		r.halting = reason
	}
}

// Stop is a job the driver must stop, with Job.Stop and the reason, before
// it calls Stopped, which returns the job's final reading.
type Stop struct {
	Contract string
	Job      Job
	Reason   contract.Reason
}

// Plan is what a start asks of the driver. Started is set when there is
// nothing to do (a repeated start, or a booking confirmed: Booked);
// otherwise the driver stops the jobs in Stops (preempted), calls Stopped
// for each, then Launch.
type Plan struct {
	Started *protocol.Started
	Stops   []Stop
}

// Start takes the exchange's start of an accepted contract: it turns the
// accept's claim into the contract's GPUs (or takes free ones when the
// claim has lapsed), or books the GPUs of a booking for its slot.
func (n *Node) Start(now time.Time, s protocol.Start) (Plan, error) {
	const op = "server.Start"
	id, t := s.Contract.ID, s.Contract.Terms
	if err := protocol.CheckID(id); err != nil {
		return Plan{}, &bourse.Error{Code: bourse.EInvalid, Op: op, Field: "contract.id", Err: err}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if started, ok, err := n.confirmBooking(now, s); ok {
		return Plan{Started: &started}, err
	}
	if r, ok := n.runs[id]; ok {
		if r.job == nil && r.preparing {
			started := r.started
			started.Preparing = true
			return Plan{Started: &started}, nil
		}
		if r.job == nil { // the driver is still stopping what it preempts
			return Plan{}, bourse.Errorf(bourse.EUnavailable, op, "contract %s is starting", id)
		}
		started := r.started
		return Plan{Started: &started}, nil
	}
	if n.closing {
		return Plan{}, bourse.Errorf(bourse.EUnavailable, op, "the server is shutting down")
	}
	if err := contract.Validate(t, n.scaleOf); err != nil {
		return Plan{}, err
	}
	n.sweep(now)
	var gpus []int
	var victims []*run
	if h, ok := n.claims[s.Offer]; ok && len(h.gpus) == t.GPUs && h.terms.Class == t.Class {
		gpus, victims = h.gpus, h.preempt
		delete(n.claims, s.Offer)
	} else {
		n.release(s.Offer)
		if gpus = n.pickFor(t, now); gpus == nil {
			return Plan{}, bourse.Errorf(bourse.ECapacityGone, op, "the claim lapsed and %d GPUs of the class are not free", t.GPUs)
		}
	}
	return Plan{Stops: n.prepare(id, t, s.Contract.Resumes, gpus, victims)}, nil
}

// prepare records a run on gpus, which become its own, and halts the runs
// it preempts; it returns their stops. n.mu is held.
func (n *Node) prepare(id string, t contract.Terms, resumes string, gpus []int, victims []*run) []Stop {
	for _, i := range gpus {
		n.own(i, "run "+id)
	}
	n.runs[id] = &run{id: id, terms: t, resumes: resumes, victims: victims,
		started: protocol.Started{Contract: id, GPUs: gpus}}
	var stops []Stop
	for _, v := range victims {
		v.stop(contract.ReasonPreempted)
		if !v.stopping && !v.ended {
			v.stopping = true
			stops = append(stops, Stop{Contract: v.id, Job: v.job, Reason: v.halting})
		}
	}
	return stops
}

// Preparing records that the driver prepares run id's job before it
// launches it, and returns the answer to its start: Started, Preparing.
func (n *Node) Preparing(now time.Time, id string) (protocol.Started, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	r, ok := n.runs[id]
	if !ok || r.job != nil {
		return protocol.Started{}, bourse.Errorf(bourse.ENotFound, "server.Preparing", "contract %s is not waiting to launch", id)
	}
	r.preparing = true
	started := r.started
	started.At, started.Preparing = now, true
	return started, nil
}

// Launch starts a prepared run's job through the Runner, once the jobs it
// preempts have ended, and returns its Started. ctx bounds the start only.
// A repeated Launch returns the first's Started.
func (n *Node) Launch(ctx context.Context, now time.Time, id string) (protocol.Started, error) {
	const op = "server.Launch"
	n.mu.Lock()
	r, ok := n.runs[id]
	switch {
	case !ok:
		n.mu.Unlock()
		return protocol.Started{}, bourse.Errorf(bourse.ENotFound, op, "contract %s was not prepared", id)
	case r.job != nil:
		defer n.mu.Unlock()
		return r.started, nil
	}
	for _, v := range r.victims {
		if !v.ended {
			n.abandon(r)
			n.mu.Unlock()
			return protocol.Started{}, bourse.Errorf(bourse.EUnavailable, op, "preempted contract %s has not stopped", v.id)
		}
	}
	var assigned []contract.GPU
	for _, g := range n.cfg.GPUs {
		if slices.Contains(r.started.GPUs, g.Index) {
			assigned = append(assigned, g)
		}
	}
	a := Assignment{Contract: id, Job: r.terms.Job, GPUs: assigned, TimeLimit: r.terms.TimeLimit, Resumes: r.resumes, Files: n.cfg.Files}
	n.mu.Unlock()

	job, err := n.runner.Start(ctx, a)

	n.mu.Lock()
	defer n.mu.Unlock()
	if err != nil {
		n.abandon(r)
		return protocol.Started{}, fmt.Errorf("start contract %s: %w", id, err)
	}
	r.job, r.victims = job, nil
	r.started.At = now
	if m, ok := n.runner.(Metered); ok {
		r.started.Meter = m.Meter()
	}
	if im, ok := job.(Imaged); ok {
		r.started.Image = im.Image()
	}
	r.started.Model = modelOf(assigned)
	r.next = now.Add(n.readingEvery)
	n.forecast(r)
	if n.closing || r.halting != "" {
		// A control or the shutdown came first: the next Tick stops it.
		r.stop(contract.ReasonShutdown)
	}
	n.active[id] = r
	n.runsValid = false
	n.recent = append(n.recent, r.terms)
	if len(n.recent) > recentMax {
		n.recent = n.recent[len(n.recent)-recentMax:]
	}
	n.clients.started(r.terms.Client, now)
	n.observe(Outcome{Kind: OutcomeStart, Now: now, Contract: id, Terms: r.terms})
	n.log.Info("started", "contract", id, "client", r.terms.Client, "gpus", r.started.GPUs)
	return r.started, nil
}

// Done is closed when contract id's job has ended, by itself or stopped; nil
// for a contract with no job here. A driver that waits on it can Tick at
// once rather than at its next turn.
func (n *Node) Done(id string) <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if r, ok := n.runs[id]; ok && r.job != nil {
		return r.job.Done()
	}
	return nil
}

// abandon forgets a run whose job did not start and frees its GPUs, which
// go back to a preempted run still holding them. n.mu is held.
func (n *Node) abandon(r *run) {
	for _, i := range r.started.GPUs {
		n.own(i, "")
		for _, v := range r.victims {
			if !v.ended && slices.Contains(v.started.GPUs, i) {
				n.own(i, "run "+v.id)
			}
		}
	}
	delete(n.runs, r.id)
}

// Control stops a contract's job for its client (ReasonSuspended or
// ReasonKilled), at the next Tick; its final reading follows. A booking
// not yet started is dropped. Stopping a stopped contract is no error.
func (n *Node) Control(now time.Time, contractID string, action contract.Reason) error {
	const op = "server.Control"
	if action != contract.ReasonSuspended && action != contract.ReasonKilled {
		return bourse.Errorf(bourse.EInvalid, op, "action %q; want %q or %q", action, contract.ReasonSuspended, contract.ReasonKilled)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cancelBooking(contractID, action) {
		return nil
	}
	r, ok := n.runs[contractID]
	if !ok {
		return bourse.Errorf(bourse.ENotFound, op, "no contract %q runs here", contractID)
	}
	r.stop(action)
	n.runsValid = false
	return nil
}

// Due is what a Tick found to do.
type Due struct {
	// Readings of running contracts, to publish, by contract.
	Readings []contract.Reading
	// Stops are jobs to stop: their time limit passed, their prepayment
	// is spent, they ended by themselves, a client or the node halted
	// them. Stop each (Job.Stop), then call Stopped for its final reading.
	Stops []Stop
	// Launch are booked contracts whose slot has begun: after Stops, Launch
	// each and report its start to the exchange.
	Launch []string
	// AskChanged says that the policy changed its ask (a learner posted
	// another price): the driver tells the exchange soon (a heartbeat).
	AskChanged bool
}

// Tick says what is due at now: each running contract's reading every
// ReadingEvery, the jobs to stop, and the bookings to start.
func (n *Node) Tick(now time.Time) Due {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.sweep(now)
	var due Due
	due.AskChanged = n.observe(Outcome{Kind: OutcomeTime, Now: now})
	due.Stops, due.Launch = n.dueBookings(now)
	// In order of contract id, in a slice the node keeps: a node ticks
	// every ReadingEvery.
	n.ids = n.ids[:0]
	for id := range n.active {
		n.ids = append(n.ids, id)
	}
	slices.Sort(n.ids)
	for _, id := range n.ids {
		r := n.active[id]
		if r.stopping {
			continue
		}
		if r.halting == "" {
			select {
			case <-r.job.Done():
				r.stop(contract.ReasonCompleted)
			default:
			}
		}
		// Measured when a reading is due, and when its prepayment is
		// forecast to run out, so that it stops then to the nanosecond
		// whatever the reading interval.
		if r.halting == "" && (!now.Before(r.next) || (!r.exhausts.IsZero() && !now.Before(r.exhausts))) {
			r.next = now.Add(n.readingEvery)
			m, err := r.job.Measure()
			if err != nil {
				n.log.Warn("measure", "contract", r.id, "err", err)
				continue
			}
			r.last = m
			switch reason := n.limitReached(r, m); {
			case m.ExitCode != nil:
				r.stop(contract.ReasonCompleted)
			case reason != "":
				r.stop(reason)
			default:
				r.seq++
				due.Readings = append(due.Readings, n.reading(r, now, m))
			}
		}
		if r.halting == "" && now.Sub(r.started.At) >= r.terms.TimeLimit {
			r.stop(contract.ReasonTimeLimit)
		}
		if r.halting != "" {
			if r.halting == contract.ReasonCompleted && now.Sub(r.started.At) >= r.terms.TimeLimit {
				r.halting = contract.ReasonTimeLimit // a runner that enforces the limit itself stopped it
			}
			r.stopping = true
			n.runsValid = false
			due.Stops = append(due.Stops, Stop{Contract: r.id, Job: r.job, Reason: r.halting})
		}
	}
	return due
}

// limitReached says why the terms end the job at this measurement, if they
// do. n.mu is held.
func (n *Node) limitReached(r *run, m Measurement) contract.Reason {
	if m.T >= r.terms.TimeLimit {
		return contract.ReasonTimeLimit
	}
	due, err := contract.Due(r.terms, contract.Usage{U: m.U, T: m.T, S: m.S}, n.cfg.Currency.Scale)
	if err != nil {
		n.log.Error("price a reading", "contract", r.id, "err", err)
		return ""
	}
	if due.GreaterThanOrEqual(r.terms.Prepayment) {
		return contract.ReasonExhausted
	}
	return ""
}

// Stopped takes a job the driver has stopped: it frees the job's GPUs and
// returns the contract's final reading, measured now (or the last good
// measurement, should that fail: settling on less than was measured is
// the client's gain, on nothing the server's loss).
func (n *Node) Stopped(now time.Time, contractID string) (contract.Reading, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	r, ok := n.runs[contractID]
	if !ok || r.job == nil {
		return contract.Reading{}, bourse.Errorf(bourse.ENotFound, "server.Stopped", "no contract %q runs here", contractID)
	}
	m, err := r.job.Measure()
	if err != nil {
		n.log.Error("measure the final reading; using the last", "contract", r.id, "err", err)
		m = r.last
	}
	first := !r.ended
	if first {
		for _, i := range r.started.GPUs {
			if n.owner[i] == "run "+r.id {
				n.own(i, "")
			}
		}
		r.ended, r.endedAt = true, now
		delete(n.active, r.id)
		n.ended = append(n.ended, r)
	}
	reason := r.halting
	if reason == "" {
		reason = contract.ReasonShutdown
	}
	rd := n.reading(r, now, m)
	rd.Seq = r.seq + 1
	rd.Final, rd.Reason, rd.ExitCode = true, reason, m.ExitCode
	if first && n.observer != nil {
		n.observeEnd(r, now, rd)
	}
	n.log.Info("stopped", "contract", r.id, "reason", reason, "u", rd.U, "t", time.Duration(rd.T))
	return rd, nil
}

func (n *Node) reading(r *run, now time.Time, m Measurement) contract.Reading {
	return contract.Reading{Contract: r.id, Seq: r.seq, U: m.U, T: contract.Duration(m.T), S: m.S, EnergyJ: m.EnergyJ, At: now}
}

// modelOf is the model of gpus, what a contract on them sold: one model,
// or the models joined by + (in order) where they differ.
func modelOf(gpus []contract.GPU) string {
	var ms []string
	for _, g := range gpus {
		if !slices.Contains(ms, g.Model) {
			ms = append(ms, g.Model)
		}
	}
	return strings.Join(ms, "+")
}
