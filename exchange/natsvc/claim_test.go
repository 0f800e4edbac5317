package natsvc_test

import (
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/protocol/natswire"
)

// beat publishes a heartbeat of the server's hello every 100 ms until
// the test ends, heard by every exchange instance (a hello is answered
// by one), and gives them a moment to hear the first.
func (s *scripted) beat() {
	s.t.Helper()
	stop := make(chan struct{})
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			body, _ := json.Marshal(protocol.Hello{Currency: cred, GPUs: s.gpus, Free: len(s.gpus), At: time.Now().UTC()})
			_ = s.nc.Publish(protocol.ServerSubject(s.id, protocol.VerbHeartbeat), body)
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	s.t.Cleanup(func() { close(stop) })
	time.Sleep(200 * time.Millisecond)
}

// TestRequestPastItsDeadline: an offer that an instance takes up after its
// client's deadline (an instance paused with a backlog) is answered
// deadline_exceeded and negotiated with no server; one within it is.
func TestRequestPastItsDeadline(t *testing.T) {
	m := newMarket(t, honest)
	m.wallet("alice", "100")
	var offers atomic.Int64
	m.scriptedServer("gpu1", 4, func(o protocol.ServerOffer) protocol.Decision {
		offers.Add(1)
		return accept(o)
	})
	nc := natstest.Connect(t, m.ns, protocol.InboxPrefix("alice"))
	send := func(id string, deadline time.Time) error {
		body, err := json.Marshal(protocol.OfferRequest{RequestID: id, Terms: terms("alice")})
		require.NoError(t, err)
		req := nats.NewMsg(protocol.ClientSubject("alice", protocol.VerbOffer))
		req.Data = body
		req.Header.Set(protocol.DeadlineHeader, deadline.UTC().Format(time.RFC3339Nano))
		msg, err := nc.RequestMsg(req, 5*time.Second)
		require.NoError(t, err)
		return natswire.DecodeError(msg)
	}
	err := send("stale", time.Now().Add(-time.Minute))
	assert.Equal(t, bourse.EDeadlineExceeded, bourse.ErrorCode(err), "%v", err)
	assert.Zero(t, offers.Load(), "no server was asked")
	require.NoError(t, send("fresh", time.Now().Add(5*time.Second)))
	assert.Equal(t, int64(1), offers.Load())
}
