package agent_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/server/agent"
)

// TestBookingSurvivesRestart: a booking the exchange confirmed is on disk
// before the agent answers the start; an agent restarted before the slot
// takes it back from its outbox directory and starts the job at start_at,
// reporting the start, instead of losing it to a void.
func TestBookingSurvivesRestart(t *testing.T) {
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
	dir := t.TempDir()
	cfg := agent.Config{GPUs: gpus[:2], OutboxDir: dir,
		Policy: server.Bookings{Base: server.Posted{P: contract.Flat(dectest.D("0.001"))}}}
	first := x.startAgent("gpu1", cfg)

	start := time.Now().Add(1500 * time.Millisecond).UTC()
	booked := terms(2, 10*time.Second, "0.001", "0.02", "1", 200*time.Millisecond)
	booked.StartAt = start
	require.True(t, x.offer("gpu1", protocol.ServerOffer{Offer: "o1", Terms: booked}).Accept)
	st, err := x.start("gpu1", "o1", "c-booked", booked)
	require.NoError(t, err)
	require.True(t, st.Booked)
	data, err := os.ReadFile(filepath.Join(dir, "bookings.json"))
	require.NoError(t, err, "the booking is on disk once its start is answered")
	assert.Contains(t, string(data), `"contract":"c-booked"`)

	require.NoError(t, first.shutdown(t))
	x.startAgent("gpu1", cfg)
	rs := x.readings("gpu1", "c-booked")
	select {
	case st := <-started:
		assert.Equal(t, "c-booked", st.Contract)
		assert.False(t, st.At.Before(start), "started at %v, before its slot at %v", st.At, start)
		assert.Equal(t, []int{0, 1}, st.GPUs)
	case <-time.After(5 * time.Second):
		t.Fatal("the restarted agent did not start the booking")
	}
	final := rs.final(0)
	assert.Equal(t, contract.ReasonCompleted, final.Reason, "the booked job ran its course")

	data, err = os.ReadFile(filepath.Join(dir, "bookings.json"))
	require.NoError(t, err)
	assert.Equal(t, "[]", string(data), "a booking that started is no longer kept")
}
