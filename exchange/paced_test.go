package exchange_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/housetest"
)

// TestPacedWatchdog: with heartbeats paced by the fleet (30 servers at
// one heartbeat a second: one every 30 s), a running contract whose
// readings are held back while its server's heartbeats, 30 s apart,
// list it is not settled as lost, though each heartbeat is older than
// ServerLostAfter for most of its interval; the server stays matched
// between them. Once the server falls silent the contract settles as
// lost ServerLostAfter and the 29 s the interval grew after the last
// heartbeat, not before. Unpaced, the sweep would have settled it 10 s
// after the first heartbeat it missed.
func TestPacedWatchdog(t *testing.T) {
	const lostAfter = 10 * time.Second
	h := housetest.New(t, exchange.Config{ServerLostAfter: lostAfter, HeartbeatsPerSecond: 1})
	for i := range 30 {
		h.Server(fmt.Sprint("gpu", i), "H100", 1, nil)
	}
	reply, err := h.House.Hello(context.Background(), "gpu0", h.Router.Nodes["gpu0"].Hello(h.Now()))
	require.NoError(t, err)
	require.Equal(t, contract.Duration(30*time.Second), reply.Heartbeat, "30 servers at one a second")
	h.Wallet("dave", "100")
	tm := job(1, "0.01")
	tm.Server = "gpu0"
	tm.Job.Profile.Duration, tm.TimeLimit = 10*time.Minute, 20*time.Minute
	tm.Prepayment = tm.CappedPrepayment(2)
	id := runFor(t, h, "w1", tm)

	// gpu0 says nothing but a heartbeat every 30 s that lists the job;
	// the other servers heartbeat as often.
	node := h.Router.Nodes["gpu0"]
	h.Router.Silence("gpu0", true)
	var last time.Time
	run := func(d time.Duration, beat bool) {
		for end := h.Now().Add(d); h.Now().Before(end); {
			h.Advance(time.Second)
			if beat && h.Now().Sub(last) >= 30*time.Second {
				require.NoError(t, h.House.Heartbeat(context.Background(), "gpu0", node.Hello(h.Now())))
				h.Beat() // the others, at the same pace
				last = h.Now()
			}
			h.House.Sweep(context.Background())
		}
	}
	run(2*time.Minute, true)
	assert.Equal(t, contract.StateRunning, contractOf(t, h, "dave", id).State, "its server's heartbeats, 30 s apart, list it")
	assert.Equal(t, 30, h.House.LiveServers(), "a server is matched between its paced heartbeats")

	run(last.Add(lostAfter+29*time.Second).Sub(h.Now()), false)
	assert.Equal(t, contract.StateRunning, contractOf(t, h, "dave", id).State, "lost before it could have heartbeated")
	run(2*time.Second, false)
	c := contractOf(t, h, "dave", id)
	require.Equal(t, contract.StateSettled, c.State)
	assert.Equal(t, contract.ReasonServerLost, c.Reason)
	h.Audit()
}
