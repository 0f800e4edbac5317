package exchange_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/housetest"
)

// stopGrace and clockSkew are exchange.Config's defaults of StopGrace
// and ClockSkew, as docs/protocol.md states them.
const (
	stopGrace = 15 * time.Second
	clockSkew = 5 * time.Second
)

// TestStopOfALyingServer: a server confirms its client's kill (or
// suspend) and ignores it: the job runs on, its readings go on and its
// heartbeats list the contract as running. What the exchange believes of
// the job ends at the kill plus the stop grace: the contract settles
// then, with the client's reason, charged at most full use of its GPUs
// until then (T by the exchange's own clock since the contract could
// start, plus the skew allowance; U at most gpus·T), and the readings
// that follow change nothing. Before the fix the heartbeats kept it
// running and every reading raised the charge, up to the time limit.
func TestStopOfALyingServer(t *testing.T) {
	for _, action := range []contract.Reason{contract.ReasonKilled, contract.ReasonSuspended} {
		t.Run(string(action), func(t *testing.T) {
			onStores(t, exchange.Config{}, func(t *testing.T, h *housetest.Harness, _ bool) { testStopOfALyingServer(t, h, action) })
		})
	}
}

func testStopOfALyingServer(t *testing.T, h *housetest.Harness, action contract.Reason) {
	ctx := context.Background()
	node := h.Server("gpu1", "H100", 2, nil)
	h.Wallet("dave", "100")
	tm := job(2, "0.01")
	tm.Job.Profile.Duration, tm.TimeLimit = 10*time.Minute, 20*time.Minute
	tm.Prepayment = tm.CappedPrepayment(2)
	reply := offer(t, h, "dave", "w1", tm, 0)
	require.NotNil(t, reply.Contract)
	id := reply.Contract.ID
	h.Run(5*time.Second, time.Second)
	require.Equal(t, contract.StateRunning, contractOf(t, h, "dave", id).State)

	h.Router.IgnoreControls("gpu1", true)
	stoppedAt := h.Now()
	c, err := h.House.Control(ctx, "dave", id, action)
	require.NoError(t, err, "the server confirms")
	require.Equal(t, contract.StateRunning, c.State)
	require.Equal(t, stopGrace, h.House.Config().StopGrace)
	require.NotNil(t, c.Stop, "the answer says when the contract settles at the latest")
	assert.Equal(t, contract.Stop{Reason: action, At: stoppedAt, By: stoppedAt.Add(stopGrace)}, *c.Stop)

	h.Run(stopGrace-time.Second, time.Second)
	assert.Equal(t, contract.StateRunning, contractOf(t, h, "dave", id).State, "within the grace its final reading may still come")
	h.Run(time.Second, time.Second)
	assert.True(t, slices.Contains(node.Hello(h.Now()).Running, id), "the server lies: its heartbeat lists the contract")
	c = contractOf(t, h, "dave", id)
	require.Equal(t, contract.StateSettled, c.State, "settled by the end of the grace, whatever the server says")
	assert.Equal(t, action, c.Reason)
	settledAt := c.SettledAt
	assert.False(t, settledAt.After(stoppedAt.Add(stopGrace)))

	// The most the exchange can believe: full use of both GPUs
	// from the acceptance to the grace's end, and the skew.
	most := stoppedAt.Add(stopGrace).Sub(c.AcceptedAt) + clockSkew
	bound, err := contract.Charge(c.Terms, contract.Usage{U: decimal.NewFromInt(2).Mul(decimal.NewFromFloat(most.Seconds())), T: most, S: decimal.NewFromInt(2)}, 2)
	require.NoError(t, err)
	assert.True(t, c.Charge.LessThanOrEqual(bound.Charge), "charged %s, at most %s", c.Charge, bound.Charge)
	require.NotNil(t, c.Reading)
	assert.LessOrEqual(t, time.Duration(c.Reading.T), most)

	// The server goes on lying; nothing changes.
	h.Run(time.Minute, time.Second)
	assert.True(t, slices.Contains(node.Hello(h.Now()).Running, id))
	later := contractOf(t, h, "dave", id)
	assert.True(t, later.Charge.Equal(c.Charge), "charged %s, then %s", c.Charge, later.Charge)
	assert.Equal(t, c.Reading.Seq, later.Reading.Seq)
	assert.Equal(t, settledAt, later.SettledAt)
	h.Audit()
}

// TestNoReadingPastTheStop: readings that reach the exchange after the
// stop grace's end, before a sweep settles the contract (its sweeps are
// late), count no time past that end: by the exchange's clock the job
// has run no longer than until then, plus the skew allowance.
func TestNoReadingPastTheStop(t *testing.T) {
	ctx := context.Background()
	h := housetest.New(t, exchange.Config{})
	h.Server("gpu1", "H100", 2, nil)
	h.Wallet("dave", "100")
	tm := job(2, "0.01")
	tm.Job.Profile.Duration, tm.TimeLimit = 10*time.Minute, 20*time.Minute
	tm.Prepayment = tm.CappedPrepayment(2)
	reply := offer(t, h, "dave", "w1", tm, 0)
	require.NotNil(t, reply.Contract)
	id := reply.Contract.ID
	h.Run(5*time.Second, time.Second)
	h.Router.IgnoreControls("gpu1", true)
	stoppedAt := h.Now()
	_, err := h.House.Control(ctx, "dave", id, contract.ReasonKilled)
	require.NoError(t, err)
	h.Run(stopGrace-time.Second, time.Second)
	before := contractOf(t, h, "dave", id)
	require.Equal(t, contract.StateRunning, before.State)

	h.Advance(10 * time.Second) // past the grace's end and its skew: no sweep meanwhile
	h.Tick()
	c := contractOf(t, h, "dave", id)
	require.Equal(t, contract.StateRunning, c.State, "no sweep yet")
	assert.Equal(t, before.Reading.Seq, c.Reading.Seq, "the server's reading of %v is not believed", h.Now().Sub(c.AcceptedAt))

	h.Run(h.House.Config().ServerLostAfter+2*time.Second, time.Second) // the sweeps catch up
	c = contractOf(t, h, "dave", id)
	require.Equal(t, contract.StateSettled, c.State)
	assert.Equal(t, contract.ReasonKilled, c.Reason)
	assert.Equal(t, before.Reading.Seq, c.Reading.Seq)
	assert.LessOrEqual(t, time.Duration(c.Reading.T), stoppedAt.Add(stopGrace).Sub(c.AcceptedAt)+clockSkew)
	h.Audit()
}
