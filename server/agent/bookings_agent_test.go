package agent_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/protocol/natswire"
	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/server/agent"
)

// TestAgentBookings: a booking reserves GPUs for its slot, refuses the
// same client's second booking and an overlapping one, lends its GPUs to
// preemptible work until the slot begins, then preempts that work and
// starts the booked job at start_at, reporting the start.
func TestAgentBookings(t *testing.T) {
	x := newExchange(t, setup{})
	started := make(chan protocol.Started, 4)
	_, err := x.nc.Subscribe(protocol.ServerSubject("*", protocol.VerbStarted), func(m *nats.Msg) {
		var st protocol.Started
		if json.Unmarshal(m.Data, &st) == nil {
			started <- st
		}
		x.respond(m, struct{}{})
	})
	require.NoError(t, err)
	reserve := server.Posted{P: contract.Flat(dectest.D("0.001"))}
	x.startAgent("gpu1", agent.Config{GPUs: gpus[:2], Policy: server.Bookings{Base: reserve, OnePerClient: true}})

	start := time.Now().Add(500 * time.Millisecond).UTC()
	booked := terms(2, 10*time.Second, "0.001", "0.02", "1", time.Hour)
	booked.StartAt = start
	d := x.offer("gpu1", protocol.ServerOffer{Offer: "o1", Terms: booked})
	require.True(t, d.Accept, d.Reason)

	second := terms(1, 10*time.Second, "0.001", "0.01", "1", time.Hour)
	second.StartAt = start.Add(time.Minute)
	d = x.offer("gpu1", protocol.ServerOffer{Offer: "o2", Terms: second})
	assert.False(t, d.Accept, "a second booking of the same client")
	assert.Contains(t, d.Reason, "one at a time")

	overlap := terms(1, 10*time.Second, "0.001", "0.01", "1", time.Hour)
	overlap.Client, overlap.StartAt = "bob", start.Add(5*time.Second)
	d = x.offer("gpu1", protocol.ServerOffer{Offer: "o3", Terms: overlap})
	assert.False(t, d.Accept, "an overlapping booking")
	assert.Empty(t, d.Counters)

	st, err := x.start("gpu1", "o1", "c-booked", booked)
	require.NoError(t, err)
	assert.True(t, st.Booked)
	assert.True(t, st.At.Equal(start), "booked to start at %v, not %v", start, st.At)
	assert.Equal(t, []int{0, 1}, st.GPUs)

	// Until the slot, the GPUs take preemptible work but not guaranteed.
	now := terms(1, 10*time.Second, "0.001", "0.01", "1", time.Hour)
	now.Client = "carol"
	d = x.offer("gpu1", protocol.ServerOffer{Offer: "o4", Terms: now})
	assert.False(t, d.Accept, "guaranteed work on booked GPUs")
	low := terms(2, 10*time.Second, "0.001", "0.02", "1", time.Hour)
	low.Client, low.Preemptible = "bob", true
	d = x.offer("gpu1", protocol.ServerOffer{Offer: "o5", Terms: low})
	require.True(t, d.Accept, d.Reason)
	lowRS := x.readings("gpu1", "c-low")
	st, err = x.start("gpu1", "o5", "c-low", low)
	require.NoError(t, err)
	assert.False(t, st.Booked)
	assert.Equal(t, []int{0, 1}, st.GPUs)
	bookedRS := x.readings("gpu1", "c-booked")

	final := lowRS.final(0)
	assert.Equal(t, contract.ReasonPreempted, final.Reason)
	assert.False(t, final.At.Before(start), "preempted at %v, before the slot at %v", final.At, start)

	select {
	case st := <-started:
		assert.Equal(t, "c-booked", st.Contract)
		assert.False(t, st.Booked)
		assert.Equal(t, []int{0, 1}, st.GPUs)
		assert.False(t, st.At.Before(start), "started at %v, before %v", st.At, start)
	case <-time.After(3 * time.Second):
		t.Fatal("the booked start was not reported")
	}
	rd, _ := bookedRS.next()
	assert.Equal(t, uint64(1), rd.Seq)
	x.waitBeat(func(h protocol.Hello) bool { return len(h.Running) == 1 && h.Running[0] == "c-booked" })

	m := x.control("gpu1", "c-booked", contract.ReasonKilled)
	require.NoError(t, natswire.DecodeError(m))
	assert.Equal(t, contract.ReasonKilled, bookedRS.final(rd.Seq).Reason)
}

// TestAgentBookingCancelled: a booking killed before its slot never starts.
func TestAgentBookingCancelled(t *testing.T) {
	x := newExchange(t, setup{})
	x.startAgent("gpu1", agent.Config{Policy: server.Bookings{Base: server.Posted{}}})
	tm := terms(1, 10*time.Second, "0.001", "0.01", "1", time.Hour)
	tm.StartAt = time.Now().Add(300 * time.Millisecond).UTC()
	require.True(t, x.offer("gpu1", protocol.ServerOffer{Offer: "o1", Terms: tm}).Accept)
	st, err := x.start("gpu1", "o1", "c1", tm)
	require.NoError(t, err)
	require.True(t, st.Booked)
	require.NoError(t, natswire.DecodeError(x.control("gpu1", "c1", contract.ReasonKilled)))
	time.Sleep(500 * time.Millisecond)
	h := x.waitBeat(func(protocol.Hello) bool { return true })
	assert.Empty(t, h.Running, "a cancelled booking started")
	assert.Equal(t, 4, h.Free)
}

// TestAgentNoBookings: by default a server takes no bookings.
func TestAgentNoBookings(t *testing.T) {
	x := newExchange(t, setup{})
	x.startAgent("gpu1", agent.Config{})
	tm := terms(1, 10*time.Second, "0.001", "0.01", "1", time.Hour)
	tm.StartAt = time.Now().Add(time.Hour).UTC()
	d := x.offer("gpu1", protocol.ServerOffer{Offer: "o1", Terms: tm})
	assert.False(t, d.Accept)
	assert.Contains(t, d.Reason, "takes no bookings")
}
