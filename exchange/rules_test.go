package exchange_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/housetest"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/internal/metrictest"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/server"
)

// The watchdog's and bookings' rules on a manual clock: what the natsvc
// tests checked with wall-clock sleeps, here to the second, without NATS.

// contractOf reads client's contract id.
func contractOf(t *testing.T, h *housetest.Harness, client, id string) contract.Contract {
	t.Helper()
	c, err := h.House.Contract(context.Background(), client, id)
	require.NoError(t, err)
	return c
}

// TestWatchdog: a running contract whose server falls silent settles on
// its last reading once ServerLostAfter has passed, not before; an
// accepted one never started is voided at its start deadline, not before,
// with the whole prepayment back.
func TestWatchdog(t *testing.T) {
	h := housetest.New(t, exchange.Config{ServerLostAfter: 10 * time.Second, StartTimeout: 15 * time.Second})
	h.Server("gpu1", "H100", 2, nil)
	h.Server("gpu9", "H100", 2, nil)
	wallet := h.Wallet("dave", "100")
	long := job(1, "0.01")
	long.Job.Profile.Duration, long.TimeLimit = 10*time.Minute, 20*time.Minute
	long.Prepayment = long.CappedPrepayment(2)
	long.Server = "gpu1"

	reply := offer(t, h, "dave", "w1", long, 0)
	require.NotNil(t, reply.Contract)
	id := reply.Contract.ID
	h.Run(30*time.Second, time.Second)
	c := contractOf(t, h, "dave", id)
	require.Equal(t, contract.StateRunning, c.State)
	require.NotNil(t, c.Reading)
	last := *c.Reading

	h.Router.Silence("gpu1", true)
	h.Run(10*time.Second, time.Second)
	assert.Equal(t, contract.StateRunning, contractOf(t, h, "dave", id).State, "silent for ServerLostAfter, not past it")
	h.Run(2*time.Second, time.Second)
	c = contractOf(t, h, "dave", id)
	require.Equal(t, contract.StateSettled, c.State)
	assert.Equal(t, contract.ReasonServerLost, c.Reason)
	assert.True(t, c.Reading.U.Equal(last.U), "settled on the last reading")
	st, err := contract.Charge(c.Terms, last.Usage(), 2)
	require.NoError(t, err)
	assert.True(t, c.Charge.Equal(st.Charge), "charged %s for %s", c.Charge, last.U)

	// A server that accepts but never starts the job.
	h.Router.MuteStarts("gpu9")
	never := job(1, "0.01")
	never.Server = "gpu9"
	reply = offer(t, h, "dave", "w2", never, 0)
	require.NotNil(t, reply.Contract, "%+v", reply)
	id = reply.Contract.ID
	h.Run(15*time.Second, time.Second)
	assert.Equal(t, contract.StateAccepted, contractOf(t, h, "dave", id).State, "not past its start deadline")
	h.Run(time.Second, time.Second)
	c = contractOf(t, h, "dave", id)
	require.Equal(t, contract.StateVoided, c.State)
	assert.Equal(t, contract.ReasonNotStarted, c.Reason)
	assert.True(t, c.Refund.Equal(c.Terms.Prepayment))
	b := h.Balance(wallet)
	assert.True(t, b.Held.IsZero(), "%+v", b)
	h.Audit()
}

// runFor has dave offer tm under request id and runs the market for
// 10 s, by when its contract runs; it returns the contract's id.
func runFor(t *testing.T, h *housetest.Harness, id string, tm contract.Terms) string {
	t.Helper()
	reply := offer(t, h, "dave", id, tm, 0)
	require.NotNil(t, reply.Contract, "%+v", reply)
	h.Run(10*time.Second, time.Second)
	require.Equal(t, contract.StateRunning, contractOf(t, h, "dave", reply.Contract.ID).State)
	return reply.Contract.ID
}

// lateBy is bourse_exchange_readings_late_total{why} in reg.
func lateBy(t *testing.T, reg *prometheus.Registry, why string) float64 {
	t.Helper()
	return metrictest.Counter(t, reg, "bourse_exchange_readings_late_total", "why", why)
}

// TestWatchdogHearsHeartbeats: a running contract whose readings are held
// back (the usage stream keeps them for a paused instance) while its
// server's heartbeats list it is not settled as lost; its readings come
// again and it completes, charged for all it used. Once the server falls
// silent too, it is settled as lost ServerLostAfter after its last
// heartbeat.
func TestWatchdogHearsHeartbeats(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := housetest.New(t, exchange.Config{ServerLostAfter: 10 * time.Second, Metrics: reg})
	h.Server("gpu1", "H100", 2, nil)
	h.Wallet("dave", "100")
	tm := job(1, "0.01")
	tm.Job.Profile.Duration, tm.TimeLimit = 2*time.Minute, 5*time.Minute
	tm.Prepayment = tm.CappedPrepayment(2)
	id := runFor(t, h, "w1", tm)

	h.Router.HoldReadings("gpu1", true)
	h.Run(30*time.Second, time.Second)
	assert.Equal(t, contract.StateRunning, contractOf(t, h, "dave", id).State, "its server says it runs it: the readings are late, not lost")
	assert.Positive(t, lateBy(t, reg, "heartbeat"), "the sweeps that waited, counted by why")
	assert.Zero(t, lateBy(t, reg, "waiting"))
	h.Router.HoldReadings("gpu1", false)
	h.Run(2*time.Minute, time.Second)
	c := contractOf(t, h, "dave", id)
	require.Equal(t, contract.StateSettled, c.State)
	assert.Equal(t, contract.ReasonCompleted, c.Reason)
	assert.True(t, c.Charge.Equal(dectest.D("1.20")), "two GPU-minutes at 0.01: %s", c.Charge)

	id = runFor(t, h, "w2", tm)
	h.Router.HoldReadings("gpu1", true)
	h.Run(20*time.Second, time.Second)
	h.Router.Silence("gpu1", true)
	h.Run(10*time.Second, time.Second)
	assert.Equal(t, contract.StateRunning, contractOf(t, h, "dave", id).State, "heard until ServerLostAfter ago")
	h.Run(2*time.Second, time.Second)
	c = contractOf(t, h, "dave", id)
	require.Equal(t, contract.StateSettled, c.State)
	assert.Equal(t, contract.ReasonServerLost, c.Reason)
	h.Audit()
}

// TestWaitingReadingsHoldTheSweep: a job's last readings, its final one
// among them, reach the transport on time but not the House: the usage
// stream handed them to an instance that paused while it stored them (in
// TestCluster, SIGSTOP with the contract's row held). The job has ended,
// so its server's heartbeats no longer list it, and its last counted
// reading ages past ServerLostAfter. Its silence is not judged while its
// readings wait; once they come the contract completes, charged for all
// it used, where the sweep had settled it as lost on an older reading
// (and the final reading, after the settlement, counted for nothing).
func TestWaitingReadingsHoldTheSweep(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := housetest.New(t, exchange.Config{ServerLostAfter: 10 * time.Second, Metrics: reg})
	h.Server("gpu1", "H100", 2, nil)
	h.Wallet("dave", "100")
	tm := job(1, "0.01")
	tm.Job.Profile.Duration, tm.TimeLimit = 30*time.Second, 5*time.Minute
	tm.Prepayment = tm.CappedPrepayment(2)
	id := runFor(t, h, "w1", tm)

	h.Router.QueueReadings("gpu1")
	h.Run(time.Minute, time.Second)
	c := contractOf(t, h, "dave", id)
	require.Equal(t, contract.StateRunning, c.State, "settled as %s while its readings waited", c.Reason)
	held, err := h.Router.Holds(context.Background(), "gpu1")
	require.NoError(t, err)
	require.True(t, held, "the job's readings, its final one among them, wait")
	assert.Positive(t, lateBy(t, reg, "waiting"), "the sweeps that waited for them, counted")

	h.ReleaseReadings("gpu1")
	h.Run(2*time.Second, time.Second)
	c = contractOf(t, h, "dave", id)
	require.Equal(t, contract.StateSettled, c.State)
	assert.Equal(t, contract.ReasonCompleted, c.Reason)
	assert.True(t, c.Charge.Equal(dectest.D("0.30")), "30 GPU-seconds at 0.01: %s", c.Charge)

	// A backlog that cannot say holds every judgement of the sweep, and
	// is asked once a sweep.
	id = runFor(t, h, "w3", tm)
	h.Router.Silence("gpu1", true)
	h.Router.BacklogDown(true)
	asked := h.Router.BacklogAsked()
	h.Run(20*time.Second, time.Second)
	c = contractOf(t, h, "dave", id)
	require.Equal(t, contract.StateRunning, c.State, "settled as %s while the backlog did not answer", c.Reason)
	assert.LessOrEqual(t, h.Router.BacklogAsked()-asked, 20, "once a sweep at most")
	h.Router.BacklogDown(false)
	h.Run(time.Second, time.Second)
	c = contractOf(t, h, "dave", id)
	require.Equal(t, contract.StateSettled, c.State)
	assert.Equal(t, contract.ReasonServerLost, c.Reason)
	h.Router.Silence("gpu1", false)
	h.Beat()

	// A server whose readings do not wait and that is silent is still
	// lost, on its last reading.
	id = runFor(t, h, "w2", tm)
	h.Router.Silence("gpu1", true)
	h.Run(12*time.Second, time.Second)
	c = contractOf(t, h, "dave", id)
	require.Equal(t, contract.StateSettled, c.State)
	assert.Equal(t, contract.ReasonServerLost, c.Reason)
	h.Audit()
}

// TestHeartbeatsWithoutReadings: a server that heartbeats a contract as
// running but never sends its readings gains nothing by it: the watchdog
// waits, but the escrow's deadline (start deadline + time limit +
// ServerLostAfter + StuckLimit) ends the contract on its last counted
// reading, as it ends one that reads but never stops.
func TestHeartbeatsWithoutReadings(t *testing.T) {
	h := housetest.New(t, exchange.Config{ServerLostAfter: 10 * time.Second, StuckLimit: time.Minute})
	h.Server("gpu1", "H100", 2, nil)
	wallet := h.Wallet("dave", "100")
	tm := job(1, "0.01")
	tm.Job.Profile.Duration, tm.TimeLimit = time.Hour, 2*time.Hour
	tm.Prepayment = dectest.D("72") // two GPU-hours at 0.01
	reply := offer(t, h, "dave", "w1", tm, 0)
	require.NotNil(t, reply.Contract)
	id := reply.Contract.ID
	h.Run(10*time.Second, time.Second)
	c := contractOf(t, h, "dave", id)
	require.Equal(t, contract.StateRunning, c.State)
	require.NotNil(t, c.Reading)
	last := *c.Reading

	// gpu1 falls silent but for heartbeats, forged or not, that keep
	// listing the contract as running.
	node := h.Router.Nodes["gpu1"]
	h.Router.Silence("gpu1", true)
	lie := func(d time.Duration) {
		for end := h.Now().Add(d); h.Now().Before(end); {
			h.Advance(time.Second) // the sweep's pace: a late sweep judges nothing
			hello := node.Hello(h.Now())
			hello.Running = []string{id}
			require.NoError(t, h.House.Heartbeat(context.Background(), "gpu1", hello))
			h.House.Sweep(context.Background())
		}
	}
	lie(2 * time.Hour)
	assert.Equal(t, contract.StateRunning, contractOf(t, h, "dave", id).State, "its escrow's deadline has not passed")
	lie(2 * time.Minute)
	c = contractOf(t, h, "dave", id)
	require.Equal(t, contract.StateSettled, c.State)
	assert.Equal(t, contract.ReasonExpired, c.Reason)
	st, err := contract.Charge(c.Terms, last.Usage(), 2)
	require.NoError(t, err)
	assert.True(t, c.Charge.Equal(st.Charge), "charged %s for its last counted reading (%s GPU-s), not for the hours it claimed", c.Charge, last.U)
	assert.True(t, h.Balance(wallet).Held.IsZero())
	h.Audit()
}

// TestBooking: an offer with a future start_at is a booking, escrowed at
// once and left accepted past StartTimeout and ServerLostAfter until its
// slot begins; the node starts it then, and it runs and settles. One
// whose server never starts it is voided StartTimeout after its start_at,
// not before. Start times out of bounds are refused.
func TestBooking(t *testing.T) {
	h := housetest.New(t, exchange.Config{ServerLostAfter: 10 * time.Second, StartTimeout: 15 * time.Second, MaxBookAhead: time.Hour})
	h.Server("gpu1", "H100", 2, server.Bookings{Base: server.Posted{}})
	wallet := h.Wallet("erin", "100")
	ctx := context.Background()
	for name, at := range map[string]time.Time{"passed": h.Now().Add(-2 * time.Minute), "too-far": h.Now().Add(2 * time.Hour)} {
		tm := job(1, "0.01")
		tm.StartAt = at
		_, err := h.House.Offer(ctx, "erin", protocol.OfferRequest{RequestID: "bad-" + name, Terms: tm})
		var e *bourse.Error
		require.ErrorAs(t, err, &e, name)
		assert.Equal(t, bourse.EInvalidOffer, e.Code, "%s: %v", name, err)
		assert.Equal(t, "terms.start_at", e.Field, name)
	}

	tm := job(1, "0.01")
	tm.StartAt = h.Now().Add(time.Minute)
	reply := offer(t, h, "erin", "book-1", tm, 0)
	require.NotNil(t, reply.Contract, "%+v", reply)
	c := *reply.Contract
	assert.True(t, c.StartDeadline.Equal(tm.StartAt.Add(15*time.Second)), "start deadline %v", c.StartDeadline)
	assert.True(t, h.Balance(wallet).Held.Equal(tm.Prepayment), "escrowed at once")
	h.Run(59*time.Second, time.Second)
	assert.Equal(t, contract.StateAccepted, contractOf(t, h, "erin", c.ID).State, "booked: neither voided nor lost before its slot")
	h.Run(2*time.Minute, time.Second)
	got := contractOf(t, h, "erin", c.ID)
	assert.Equal(t, contract.StateSettled, got.State)
	assert.Equal(t, contract.ReasonCompleted, got.Reason)
	assert.False(t, got.StartedAt.Before(tm.StartAt), "started at its slot: %v", got.StartedAt)

	t.Run("NeverStarted", func(t *testing.T) {
		h.Server("gpu2", "H100", 2, server.Bookings{Base: server.Posted{}})
		h.Router.MuteStarts("gpu2")
		tm := job(1, "0.01")
		tm.Server, tm.StartAt = "gpu2", h.Now().Add(time.Minute)
		reply := offer(t, h, "erin", "book-2", tm, 0)
		require.NotNil(t, reply.Contract, "%+v", reply)
		id := reply.Contract.ID
		h.Run(74*time.Second, time.Second) // past start_at, not its deadline
		assert.Equal(t, contract.StateAccepted, contractOf(t, h, "erin", id).State)
		h.Run(2*time.Second, time.Second)
		c := contractOf(t, h, "erin", id)
		assert.Equal(t, contract.StateVoided, c.State)
		assert.Equal(t, contract.ReasonNotStarted, c.Reason)
	})
	assert.True(t, h.Balance(wallet).Held.IsZero())
	h.Audit()
}
