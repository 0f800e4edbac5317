package exchange_test

import (
	"context"
	"encoding/json"
	"fmt"
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
	"github.com/bourse/bourse/protocol"
)

// finalOf is a final reading of contract id: u GPU-seconds over t, made
// at now.
func finalOf(id string, seq uint64, u string, t time.Duration, now time.Time) []byte {
	body, _ := json.Marshal(contract.Reading{Contract: id, Seq: seq, U: dectest.D(u), T: contract.Duration(t), S: dectest.D("1"),
		At: now, Final: true, Reason: contract.ReasonCompleted})
	return body
}

// settlingFor has server say, for d of the harness's time, that it holds
// the final reading of id (its heartbeats list it as settling, none as
// running), sweeping as it goes.
func settlingFor(h *housetest.Harness, server, id string, d time.Duration) {
	for end := h.Now().Add(d); h.Now().Before(end); {
		h.Advance(time.Second)
		hello := h.Router.Nodes[server].Hello(h.Now())
		hello.Running, hello.Settling = nil, []string{id}
		_ = h.House.Heartbeat(context.Background(), server, hello)
		h.House.Sweep(context.Background())
	}
}

// TestReceipts: a server that holds a contract's final reading says so in
// its heartbeats (settling), and the sweep does not take the contract's
// silence for a lost server's meanwhile; the reading, sent with the
// server's question, settles it, and the receipt says it is kept, as it
// does when asked again. A final reading of a contract that settled as
// lost before it came is ended, naming how; another server's, or a
// malformed one, is refused.
func TestReceipts(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := housetest.New(t, exchange.Config{ServerLostAfter: 10 * time.Second, Metrics: reg})
	h.Server("gpu1", "H100", 2, nil)
	h.Server("gpu2", "H100", 1, nil)
	h.Wallet("dave", "100")
	tm := job(1, "0.01")
	tm.Server = "gpu1"
	ctx := context.Background()

	id := runFor(t, h, "w1", tm)
	h.Router.Silence("gpu1", true)
	settlingFor(h, "gpu1", id, 30*time.Second)
	require.Equal(t, contract.StateRunning, contractOf(t, h, "dave", id).State, "settled while its server held the final reading")
	assert.Positive(t, lateBy(t, reg, "settling"), "the sweeps that waited, counted by why")

	final := finalOf(id, 100, "20", 20*time.Second, h.Now())
	rc := h.House.Receipt(ctx, "gpu1", final, "")
	assert.Equal(t, protocol.Receipt{Contract: id, Seq: 100, Status: protocol.ReceiptKept, Stored: 100}, rc)
	c := contractOf(t, h, "dave", id)
	require.Equal(t, contract.StateSettled, c.State)
	assert.Equal(t, contract.ReasonCompleted, c.Reason)
	assert.True(t, c.Charge.Equal(dectest.D("0.20")), "20 GPU-seconds at 0.01: %s", c.Charge)

	rc = h.House.Receipt(ctx, "gpu1", final, "")
	assert.Equal(t, protocol.Receipt{Contract: id, Seq: 100, Status: protocol.ReceiptKept, Stored: 100,
		State: contract.StateSettled, Reason: contract.ReasonCompleted}, rc, "asked again")

	// Silent and not settling: lost, on its last reading; a final
	// reading after that is too late, and the receipt says how it ended.
	h.Router.Silence("gpu1", false)
	lost := runFor(t, h, "w2", tm)
	h.Router.Silence("gpu1", true)
	h.Run(15*time.Second, time.Second)
	c = contractOf(t, h, "dave", lost)
	require.Equal(t, contract.ReasonServerLost, c.Reason)
	rc = h.House.Receipt(ctx, "gpu1", finalOf(lost, 100, "15", 15*time.Second, h.Now()), "")
	assert.Equal(t, protocol.ReceiptEnded, rc.Status)
	assert.Equal(t, contract.StateSettled, rc.State)
	assert.Equal(t, contract.ReasonServerLost, rc.Reason)
	assert.Less(t, rc.Stored, uint64(100))

	other := h.House.Receipt(ctx, "gpu2", finalOf(lost, 101, "1", time.Second, h.Now()), "")
	assert.Equal(t, protocol.ReceiptRefused, other.Status)
	require.NotNil(t, other.Error)
	assert.Equal(t, bourse.EPermission, other.Error.Code)

	bad := h.House.Receipt(ctx, "gpu1", []byte(`{"contract":"x"}`), "")
	assert.Equal(t, protocol.ReceiptRefused, bad.Status)
	require.NotNil(t, bad.Error)
	assert.Equal(t, bourse.EInvalid, bad.Error.Code)
	h.Audit()
}

// TestHeardElsewhere: a server heard by one instance and not another
// (its NATS node cut off from the other's) runs a contract whose
// readings reach neither. The instance that does not hear it does not
// settle the contract as lost while the other records, in the store they
// share, that the server's heartbeats list it; once no instance hears
// the server, it settles as lost on its last reading.
func TestHeardElsewhere(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := housetest.New(t, exchange.Config{ServerLostAfter: 10 * time.Second, ShareHearing: true})
	other := h.Instance()
	h.Configure(func(c *exchange.Config) { c.Metrics = reg }) // h.House anew, with its metrics
	node := h.Server("gpu1", "H100", 1, nil)
	h.Wallet("dave", "100")
	tm := job(1, "0.01")
	tm.Job.Profile.Duration, tm.TimeLimit = 5*time.Minute, 10*time.Minute
	tm.Prepayment = tm.CappedPrepayment(2)
	id := runFor(t, h, "w1", tm)
	ctx := context.Background()

	h.Router.Silence("gpu1", true) // cut off from h's instance: no readings, no heartbeats
	for range 40 {
		h.Advance(time.Second)
		_ = other.Heartbeat(ctx, "gpu1", node.Hello(h.Now()))
		other.Sweep(ctx)
		h.House.Sweep(ctx)
	}
	require.Equal(t, contract.StateRunning, contractOf(t, h, "dave", id).State, "settled while another instance heard its server run it")
	assert.Positive(t, lateBy(t, reg, "elsewhere"), "the sweeps that waited, counted by why")

	for range 30 { // no instance hears it now
		h.Advance(time.Second)
		other.Sweep(ctx)
		h.House.Sweep(ctx)
	}
	c := contractOf(t, h, "dave", id)
	require.Equal(t, contract.StateSettled, c.State)
	assert.Equal(t, contract.ReasonServerLost, c.Reason)
	h.Audit()
}

// TestBrokenWordDemotes: a server that asks less than any other and
// accepts every offer, then starts none (it has no GPUs), captures the
// offers honest servers would run, each voided at its start deadline
// (the probe of 2026-12-01: 15 of 20). Its record, read from the
// store, shows it; once it left MinDemote accepts and most of them
// unstarted, offers and the book go to the honest server, and the liar
// is asked only where no other server would take an offer. bid servers
// shows both records.
func TestBrokenWordDemotes(t *testing.T) {
	h := housetest.New(t, exchange.Config{KeepRecords: true, StartTimeout: 15 * time.Second})
	h.Server("liar", "H100", 8, posted("0.0001"))
	h.Router.MuteStarts("liar")
	h.Server("honest", "H100", 8, posted("0.001"))
	h.Wallet("dave", "1000")
	ctx := context.Background()
	servedBy := func(id string) string {
		reply := offer(t, h, "dave", id, job(1, "0.01"), 0)
		require.NotNil(t, reply.Contract, "%+v", reply)
		return reply.Contract.Server
	}
	for i := range protocol.MinDemote {
		assert.Equal(t, "liar", servedBy(fmt.Sprint("early-", i)), "the cheapest ask takes it while its record is clean")
	}
	h.Run(time.Minute, time.Second) // the starts' deadlines pass: voided, and the records read again
	var liar *protocol.Record
	for _, s := range h.House.Servers(housetest.Currency) {
		if s.ID == "liar" {
			liar = s.Record
		}
	}
	require.NotNil(t, liar, "no record of the liar")
	assert.Equal(t, protocol.MinDemote, liar.NotStarted)
	assert.True(t, liar.Demoted)

	for i := range 8 {
		assert.Equal(t, "honest", servedBy(fmt.Sprint("later-", i)), "the liar's record sends offers elsewhere")
	}
	// The honest server is full: a waiting offer waits for it rather
	// than go to the liar, which has room (and drained the book so).
	reply, err := h.House.Offer(ctx, "dave", protocol.OfferRequest{RequestID: "waits", Terms: job(1, "0.01"), Wait: contract.Duration(time.Hour)})
	require.NoError(t, err)
	require.NotNil(t, reply.Queued, "%+v", reply)
	h.Run(30*time.Second, time.Second)
	assert.Zero(t, h.Router.AskedOf("liar")-protocol.MinDemote, "the book asked the liar")
	h.Audit()
}
