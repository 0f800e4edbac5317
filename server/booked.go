package server

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/protocol/natswire"
	"github.com/bourse/bourse/trade"
)

// booking is an accepted offer for a future slot. Its GPUs are not owned
// until the slot begins: preemptible jobs, and guaranteed ones that end in
// time, use them meanwhile. Guarded by the agent's mu.
type booking struct {
	offer    string
	terms    contract.Terms
	gpus     []int
	until    time.Time // when an unconfirmed booking lapses, like a hold
	contract string    // set by the exchange's Start
	resumes  string
	timer    *time.Timer // starts the job at terms.StartAt, once confirmed
	starting bool        // the timer fired: the job is being started
	halt     trade.Reason
}

func (b *booking) view() Booking {
	id := b.contract
	if id == "" {
		id = b.offer
	}
	return Booking{ID: id, Terms: b.terms, GPUs: b.gpus}
}

func (b *booking) started() protocol.Started {
	return protocol.Started{Contract: b.contract, GPUs: b.gpus, At: b.terms.StartAt, Booked: true}
}

// decideBooking decides on an offer that starts in the future: the policy
// must take it as a booking (Decision.Book), and GPUs must be free for its
// slot. a.mu is held.
func (a *Agent) decideBooking(so protocol.ServerOffer, now time.Time) protocol.Decision {
	if c, ok := a.counters[so.Counter]; ok && so.Counter != "" && c.terms.Equal(so.Terms) {
		if a.book(so, now) {
			return a.accepted()
		}
		return protocol.Decision{Reason: "the counter-offer's GPUs were booked meanwhile", Code: bourse.ECapacityGone}
	}
	d := a.policy.Decide(so.Terms, a.state(now, so.Terms.Client))
	switch {
	case d.Accept && !d.Book:
		return protocol.Decision{Reason: "this server takes no bookings: leave start_at out"}
	case d.Accept:
		if a.book(so, now) {
			return a.accepted()
		}
		return protocol.Decision{Reason: "not enough GPUs of the class free for the slot"}
	}
	return a.reject(d, now)
}

// book reserves GPUs free for the offer's slot, lowest indexes first, and
// reports whether there were enough. a.mu is held.
func (a *Agent) book(so protocol.ServerOffer, now time.Time) bool {
	t := so.Terms
	delete(a.bookings, so.Offer)
	var gpus []int
	for _, g := range a.state(now, t.Client).FreeDuring(t.StartAt, t.StartAt.Add(t.TimeLimit)) {
		if len(gpus) < t.GPUs && Fits(t.Class, g) {
			gpus = append(gpus, g.Index)
		}
	}
	if len(gpus) < t.GPUs {
		return false
	}
	a.bookings[so.Offer] = &booking{offer: so.Offer, terms: t, gpus: gpus, until: now.Add(a.cfg.HoldFor)}
	return true
}

// bookedDuring reports the GPUs of bookings whose slots overlap
// [from, to). a.mu is held.
func (a *Agent) bookedDuring(from, to time.Time) map[int]bool {
	if len(a.bookings) == 0 {
		return nil
	}
	st := State{}
	for _, b := range a.bookings {
		if !b.starting {
			st.Bookings = append(st.Bookings, b.view())
		}
	}
	return st.booked(from, to)
}

// confirmBooking answers the exchange's Start of a booked contract: it
// keeps the GPUs for the slot and sets a timer to start the job at
// start_at; the reply is Started with Booked. It reports false for a
// contract that is not a booking, or whose start is due.
func (a *Agent) confirmBooking(s protocol.Start) (protocol.Started, bool, error) {
	const op = "server.start"
	id, t := s.Contract.ID, s.Contract.Terms
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.runs[id]; ok {
		return protocol.Started{}, false, nil
	}
	b, ok := a.bookings[s.Offer]
	if ok && b.contract != "" {
		return b.started(), true, nil // a repeated start
	}
	now := a.now()
	if !t.StartAt.After(now) {
		return protocol.Started{}, false, nil
	}
	if a.closing {
		return protocol.Started{}, true, bourse.Errorf(bourse.EUnavailable, op, "the server is shutting down")
	}
	if err := contract.Validate(t, a.scaleOf); err != nil {
		return protocol.Started{}, true, err
	}
	if !ok || !b.terms.Equal(t) {
		// The booking lapsed, or was for other terms: book anew.
		if !a.book(protocol.ServerOffer{Offer: s.Offer, Terms: t}, now) {
			return protocol.Started{}, true, bourse.Errorf(bourse.ECapacityGone, op, "the booking lapsed and %d GPUs of the class are not free for its slot", t.GPUs)
		}
		b = a.bookings[s.Offer]
	}
	b.contract, b.resumes, b.until = id, s.Contract.Resumes, time.Time{}
	b.timer = time.AfterFunc(t.StartAt.Sub(now), func() { a.startBooking(b) })
	a.log.Info("booked", "contract", id, "client", t.Client, "gpus", b.gpus, "start", t.StartAt)
	return b.started(), true, nil
}

// startBooking starts a booked job at its start_at: preemptible jobs on its
// GPUs are preempted, holds on them released, and the start is reported
// on the server's started subject.
func (a *Agent) startBooking(b *booking) {
	a.mu.Lock()
	if a.bookings[b.offer] != b || a.closing {
		a.mu.Unlock()
		return
	}
	b.starting = true
	var victims []*run
	var blocked string
	for _, i := range b.gpus {
		owner := a.owner[i]
		if id, ok := strings.CutPrefix(owner, "offer "); ok {
			a.release(id) // its start finds other GPUs, or none
			owner = a.owner[i]
		}
		id, ok := strings.CutPrefix(owner, "run ")
		if !ok {
			continue
		}
		r := a.active[id]
		switch {
		case r == nil:
		case !r.terms.Preemptible:
			blocked = id
		case !slices.Contains(victims, r):
			if r.claimed != "" {
				a.release(r.claimed)
			}
			victims = append(victims, r)
		}
	}
	if blocked != "" {
		delete(a.bookings, b.offer)
		a.mu.Unlock()
		// The exchange voids the contract at its start deadline.
		a.log.Error("booked GPUs are taken by a guaranteed job", "contract", b.contract, "by", blocked)
		return
	}
	for _, i := range b.gpus {
		a.owner[i] = "run " + b.contract
		a.freeValid = false
	}
	a.mu.Unlock()

	started, err := a.launch(b.contract, b.terms, b.resumes, b.gpus, victims)
	a.mu.Lock()
	delete(a.bookings, b.offer)
	halt := b.halt
	r := a.runs[b.contract]
	a.mu.Unlock()
	if err != nil {
		a.log.Warn("start booked contract", "contract", b.contract, "err", err)
		return
	}
	if halt != "" && r != nil {
		r.halt(halt)
	}
	// If this report is lost, the first reading tells the exchange.
	body, _ := json.Marshal(started)
	ctx, cancel := context.WithTimeout(a.runCtx, 2*time.Second)
	defer cancel()
	msg, err := a.nc.RequestWithContext(ctx, protocol.ServerSubject(a.id, protocol.VerbStarted), body)
	if err == nil {
		err = natswire.DecodeError(msg)
	}
	if err != nil {
		a.log.Warn("report the start of a booked contract", "contract", b.contract, "err", err)
	}
}

// cancelBooking drops the booking of a contract that has not started,
// for a client's kill or suspend or the exchange's void, and reports
// whether there was one. A booking whose job is starting stops with
// action once it has.
func (a *Agent) cancelBooking(contractID string, action trade.Reason) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for id, b := range a.bookings {
		if b.contract != contractID {
			continue
		}
		if b.starting {
			b.halt = action
			return true
		}
		b.timer.Stop()
		delete(a.bookings, id)
		a.log.Info("booking cancelled", "contract", contractID, "action", action)
		return true
	}
	return false
}
