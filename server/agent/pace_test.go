package agent_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/server/agent"
)

// TestAgentPaced: to an exchange that paces heartbeats (its hello reply
// sets change_gap) the agent says in each heartbeat the interval it
// keeps, and beats at the longer one a pace delivery gives; to an
// exchange older than pacing it says none, which that exchange's strict
// decoding would refuse.
func TestAgentPaced(t *testing.T) {
	t.Run("older exchange", func(t *testing.T) {
		x := newExchange(t, setup{})
		x.startAgent("gpu1", agent.Config{})
		h := x.waitBeat(func(protocol.Hello) bool { return true })
		assert.Zero(t, h.Heartbeat, "a heartbeat says an interval to an exchange that does not pace")
	})
	t.Run("pacing exchange", func(t *testing.T) {
		x := newExchange(t, setup{changeGap: every / 10})
		x.startAgent("gpu1", agent.Config{})
		h := x.waitBeat(func(protocol.Hello) bool { return true })
		assert.Equal(t, contract.Duration(every), h.Heartbeat, "the interval of the hello reply")

		slow := 6 * every
		body, err := json.Marshal(protocol.Pace{Heartbeat: contract.Duration(slow)})
		require.NoError(t, err)
		require.NoError(t, x.nc.Publish(protocol.DeliverSubject("gpu1", protocol.DeliverPace), body))
		x.waitBeat(func(h protocol.Hello) bool { return h.Heartbeat == contract.Duration(slow) })
		for len(x.beats) > 0 {
			<-x.beats
		}
		window := 5 * slow
		time.Sleep(window)
		n := len(x.beats)
		assert.LessOrEqual(t, n, 6, "heartbeats in %v at %v: the pace not kept", window, slow)
		assert.GreaterOrEqual(t, n, 3, "heartbeats in %v at %v", window, slow)
	})
}
