package server

import (
	"strings"
	"testing"
	"time"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/internal/dectest"
)

func TestBookingsDecide(t *testing.T) {
	base := Posted{P: contract.Flat(dectest.D("0.001"))}
	policy := Bookings{Base: base, MaxAhead: 24 * time.Hour, OnePerClient: true}
	at := func(start time.Duration, f ...func(*contract.Terms)) contract.Terms {
		o := offer()
		if start != 0 {
			o.StartAt = now.Add(start)
		}
		for _, f := range f {
			f(&o)
		}
		return o
	}
	preemptible := func(o *contract.Terms) { o.Preemptible = true }
	// booked holds GPUs for [now+from, now+from+1h).
	booked := func(st View, from time.Duration, gpus ...int) View {
		b := offer()
		b.Client, b.StartAt, b.TimeLimit = "bob", now.Add(from), time.Hour
		st.Bookings = append(st.Bookings, Booking{ID: "c-bob", Terms: b, GPUs: gpus})
		return st
	}
	running := func(st View, pre bool, limit time.Duration, gpu int) View {
		r := offer()
		r.Preemptible, r.TimeLimit = pre, limit
		st.Running = append(st.Running, Run{ID: "c-run", Terms: r, GPUs: []int{gpu}, Started: now})
		return st
	}
	for _, tc := range []struct {
		name   string
		offer  contract.Terms
		st     View
		accept bool
		book   bool
		reason string
	}{
		{name: "now, nothing booked", offer: at(0), st: testView(), accept: true},
		{name: "a booking", offer: at(time.Hour), st: testView(), accept: true, book: true},
		{name: "a booking on GPUs busy now with preemptible work", offer: at(time.Hour),
			st: running(running(testView(0, 1, 2), true, 3*time.Hour, 0), true, 3*time.Hour, 1), accept: true, book: true},
		{name: "a booking after a guaranteed job ends", offer: at(time.Hour),
			st: running(testView(2, 3), false, time.Hour, 2), accept: true, book: true},
		{name: "a booking before a guaranteed job ends", offer: at(time.Hour),
			st: running(testView(0, 1, 2), false, 2*time.Hour, 2), reason: "1 free"},
		{name: "too far ahead", offer: at(25 * time.Hour), st: testView(), reason: "more than 24h0m0s ahead"},
		{name: "one per client", offer: at(time.Hour), st: func() View { st := testView(); st.Client.Booked = 1; return st }(),
			reason: "one at a time"},
		{name: "overlapping booking", offer: at(90 * time.Minute), st: booked(testView(), time.Hour, 0, 1, 2), reason: "1 free"},
		{name: "adjacent booking", offer: at(2 * time.Hour), st: booked(testView(), time.Hour, 0, 1, 2), accept: true, book: true},
		{name: "beside a booking", offer: at(time.Hour), st: booked(testView(), time.Hour, 0, 1), accept: true, book: true},
		{name: "guaranteed now, booked soon", offer: at(0), st: booked(testView(), 10*time.Minute, 0, 1, 2, 3), reason: "no free GPU"},
		{name: "preemptible now, booked soon", offer: at(0, preemptible), st: booked(testView(), 10*time.Minute, 0, 1, 2, 3), accept: true},
		{name: "guaranteed now, ends before the booking", offer: at(0), st: booked(testView(), time.Hour, 0, 1, 2, 3), accept: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := policy.Decide(tc.offer, tc.st)
			if d.Accept != tc.accept || d.Book != tc.book || !strings.Contains(d.Reason, tc.reason) {
				t.Errorf("Decide = accept %v, book %v, %q; want %v, %v, %q", d.Accept, d.Book, d.Reason, tc.accept, tc.book, tc.reason)
			}
		})
	}
	if (Bookings{}).Validate() == nil || (Bookings{Base: base, MaxAhead: -1}).Validate() == nil || policy.Validate() != nil {
		t.Error("Validate")
	}
	if got := policy.String(); got != "bookings reserve" {
		t.Errorf("String = %q", got)
	}
}

// A booking's cooldown counts to its start, not to now.
func TestFairUseBookingCooldown(t *testing.T) {
	rules := FairUse{Base: Bookings{Base: Posted{P: contract.Flat(dectest.D("0.001"))}}, Cooldown: 24 * time.Hour}
	st := testView()
	st.Client.LastEnd = now.Add(-time.Hour)
	o := offer()
	if d := rules.Decide(o, st); d.Accept {
		t.Error("accepted an offer for now within the cooldown")
	}
	o.StartAt = now.Add(23 * time.Hour)
	if d := rules.Decide(o, st); !d.Accept || !d.Book {
		t.Errorf("refused a booking that starts after the cooldown: %s", d.Reason)
	}
	o.StartAt = now.Add(22 * time.Hour)
	if d := rules.Decide(o, st); d.Accept {
		t.Error("accepted a booking that starts within the cooldown")
	}
}
