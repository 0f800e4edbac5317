package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// TestNodeRestoresBookings: what Bookings saves, Restore takes back on a
// fresh node, which starts the booking at its slot; bookings that no
// longer fit or whose slot began too long ago are dropped, each said.
func TestNodeRestoresBookings(t *testing.T) {
	tn := newTestNode(t, Bookings{Base: Posted{}})
	_, gen0 := tn.n.Bookings()
	tm := job(2, "1", 2*time.Second, time.Hour)
	tm.StartAt = tn.now.Add(10 * time.Second)
	tn.start("o1", "c1", tm)
	saved, gen := tn.n.Bookings()
	require.Len(t, saved, 1)
	assert.NotEqual(t, gen0, gen, "a confirmed booking changes the generation")
	assert.Equal(t, SavedBooking{Offer: "o1", Contract: "c1", Terms: tm, GPUs: []int{0, 1}}, saved[0])

	late := saved[0]
	late.Offer, late.Contract, late.GPUs = "o2", "c2", []int{2, 3}
	late.Terms.StartAt = tn.now.Add(-LateBooking - time.Second)
	gone := saved[0]
	gone.Offer, gone.Contract, gone.GPUs = "o3", "c3", []int{2, 7}
	twice := saved[0]
	twice.Offer, twice.Contract = "o4", "c4"

	fresh := newTestNode(t, Bookings{Base: Posted{}})
	fresh.now = tn.now
	err := fresh.n.Restore(fresh.now, []SavedBooking{saved[0], late, gone, twice})
	require.Error(t, err)
	for _, want := range []string{"booking c2 dropped: its slot began", "booking c3 dropped: GPU 7 is not this server's", "booking c4 dropped: GPU 0 is kept for c1 too"} {
		assert.Contains(t, err.Error(), want)
	}
	kept, _ := fresh.n.Bookings()
	assert.Equal(t, saved, kept, "the good booking is back, the others are not")

	// The restored booking holds its GPUs for its slot and starts then.
	other := job(2, "1", time.Second, time.Hour)
	other.Client, other.StartAt = "bob", tm.StartAt.Add(time.Second)
	d := fresh.n.Decide(fresh.now, protocol.ServerOffer{Offer: "o5", Terms: other})
	assert.True(t, d.Accept, "two GPUs are still free for the slot: %s", d.Reason)
	rs := fresh.run(14 * time.Second)
	var finals []contract.Reading
	for _, r := range rs {
		if r.Final {
			finals = append(finals, r)
		}
	}
	require.Len(t, finals, 1, "%+v", rs)
	assert.Equal(t, "c1", finals[0].Contract)
	assert.Equal(t, contract.ReasonCompleted, finals[0].Reason)
	after, _ := fresh.n.Bookings()
	assert.Empty(t, after, "a started booking is no longer saved")
}
