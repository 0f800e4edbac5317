package natsvc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/bidder"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/sqlstore"
	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/protocol/natswire"
)

// TestRetryWhileTheFirstTryNegotiates drives the interleaving of issue
// 26: a client's offer is slow to be accepted (the server takes 600 ms),
// the client gives up after 150 ms and retries with the same request id,
// which reaches an exchange instance (the same one, or, with two, either)
// while the first try still negotiates. The server has room for one
// contract and refuses every later offer, as a server whose GPUs the
// first try took would. The retry must answer the contract the first try
// makes, never "no contract"; the client is charged only for what it was
// told of. On memory and PostgreSQL, with one instance and with two.
func TestRetryWhileTheFirstTryNegotiates(t *testing.T) {
	onStores(t, func(t *testing.T, store exchange.Store) {
		for _, instances := range []int{1, 2} {
			t.Run(fmt.Sprint(instances, "Instances"), func(t *testing.T) {
				m := newMarketOn(t, newEmptyStore(t, store, instances), nil)
				for range instances - 1 {
					m.startExchange()
				}
				m.wallet("alice", "1000")
				var offers atomic.Int64
				srv := m.scriptedServer("gpu1", 64, func(o protocol.ServerOffer) protocol.Decision {
					if offers.Add(1)%2 == 1 { // the first try of each request
						time.Sleep(600 * time.Millisecond)
						return accept(o)
					}
					return protocol.Decision{Reason: "no GPUs free"}
				})
				srv.beat() // its hello reached one instance; every one hears its heartbeat
				impatient := m.clientTimeout("alice", 150*time.Millisecond)
				patient := m.clientTimeout("alice", 10*time.Second)
				for i := range 4 {
					offers.Store(0)
					id := fmt.Sprint("train-", instances, "-", i)
					_, err := impatient.Offer(context.Background(), id, terms("alice"))
					require.Error(t, err, "the first try's answer comes after the client gave up")
					reply, err := patient.Offer(context.Background(), id, terms("alice"))
					require.NoError(t, err)
					require.NotNil(t, reply.Contract, "the retry answers the first try's contract, not %+v", reply)
					c, err := m.store.Contract(context.Background(), reply.Contract.ID)
					require.NoError(t, err)
					assert.True(t, c.HoldsEscrow(), "the contract the client was told of is the one escrowed: %s", c.State)
				}
				m.audit()
			})
		}
	})
}

// newEmptyStore is store for the first subtest, and a fresh store of the
// same kind for the next (a market's ledger must be empty).
func newEmptyStore(t *testing.T, store exchange.Store, instances int) exchange.Store {
	switch {
	case instances == 1:
		return store
	case isSQL(store):
		return sqlStore(t)
	}
	return memStore()
}

func isSQL(s exchange.Store) bool {
	_, ok := s.(*sqlstore.Store)
	return ok
}

// clientTimeout is client id with its own request timeout, which sends
// each request once: the test makes the retries.
func (m *market) clientTimeout(id string, timeout time.Duration) *bidder.Client {
	m.t.Helper()
	c, err := bidder.Dial(bidder.Config{ID: id, Conn: natstest.Connect(m.t, m.ns, protocol.InboxPrefix(id)), Timeout: timeout, Retries: -1})
	require.NoError(m.t, err)
	return c
}

// beat publishes a heartbeat of the server's hello every 100 ms until
// the test ends, heard by every exchange instance (a hello is answered
// by one), and gives them a moment to hear the first.
func (s *scripted) beat() {
	s.t.Helper()
	body, err := json.Marshal(protocol.Hello{Currency: cred, GPUs: s.gpus, Free: len(s.gpus)})
	require.NoError(s.t, err)
	stop := make(chan struct{})
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
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
