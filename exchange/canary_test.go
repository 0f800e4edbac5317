package exchange_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/canary"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/housetest"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/server"
)

// houseMarket is the House as a client speaks to it, for the canary
// runner: what bidder.Client says over the wire, said in process.
type houseMarket struct {
	h      *housetest.Harness
	client string
}

func (m houseMarket) Servers(_ context.Context, cur string) ([]protocol.Server, error) {
	return m.h.House.Servers(cur), nil
}

func (m houseMarket) Offer(ctx context.Context, id string, t contract.Terms) (protocol.OfferReply, error) {
	return m.h.House.Offer(ctx, m.client, protocol.OfferRequest{RequestID: id, Terms: t})
}

func (m houseMarket) Take(ctx context.Context, id string, k contract.Counter) (protocol.OfferReply, error) {
	t := k.Terms
	t.Server = k.Server
	return m.h.House.Offer(ctx, m.client, protocol.OfferRequest{RequestID: id, Terms: t, Counter: k.ID})
}

// canaryRunner runs canaries on h as client, on h's clock: waiting moves
// it, the servers ticking and the House sweeping as they would.
func canaryRunner(h *housetest.Harness, client string) *canary.Runner {
	n := 0
	return &canary.Runner{Market: houseMarket{h, client}, Store: h.Store, Client: client, Currency: housetest.Currency, Scale: 2,
		RequestID: func() string { n++; return fmt.Sprintf("cli-%016x", n) },
		Now:       h.Now,
		Sleep:     func(_ context.Context, d time.Duration) error { h.Run(d, time.Second); return nil },
	}
}

// recordOf is server's record as the servers reply shows it.
func recordOf(t *testing.T, h *housetest.Harness, id string) *protocol.Record {
	t.Helper()
	for _, s := range h.House.Servers(housetest.Currency) {
		if s.ID == id {
			return s.Record
		}
	}
	t.Fatalf("no live server %s", id)
	return nil
}

// TestCanaries: the market's canary runner, an ordinary client, offers a
// synthetic job of known use (one GPU busy half of a minute: 30
// GPU-seconds) to each server by name at its ask. The honest server's
// contract settles on the truth and passes; a server whose meter says
// half as much again, and one whose meter says half, settle on a lie and
// fail; a server that accepts and never starts leaves the canary voided,
// and one the runner stops waiting for is still running: both
// inconclusive. The results join the records; the liars, cheapest of
// all, are demoted (offers go to the honest server, dearer), the others
// not; a liar whose meter is mended is restored once it has passed two
// canaries since its failure, and demoted again by its next lie however
// many it passed before. Fails without canary results in the record.
func TestCanaries(t *testing.T) {
	h := housetest.New(t, exchange.Config{KeepRecords: true})
	h.Server("honest", "H100", 4, posted("0.002"))
	over := &housetest.LyingMeter{Runner: &server.Synthetic{Now: h.Clock.Now}, Factor: dectest.D("1.5")}
	h.ServerRunning("over", "H100", 4, posted("0.001"), over)
	h.ServerRunning("under", "H100", 4, posted("0.0015"), housetest.LyingMeter{Runner: &server.Synthetic{Now: h.Clock.Now}, Factor: dectest.D("0.5")})
	h.Server("mute", "H100", 4, posted("0.003"))
	h.Router.MuteStarts("mute")
	h.Wallet("k7", "100")
	h.Wallet("dave", "100")
	ctx := context.Background()
	served := func(id string) string {
		reply := offer(t, h, "dave", id, job(1, "0.01"), 0)
		require.NotNil(t, reply.Contract, "%+v", reply)
		return reply.Contract.Server
	}
	assert.Equal(t, "over", served("before"), "the cheapest ask takes an offer while its record is clean")

	r := canaryRunner(h, "k7")
	truth := canary.Truth{Utilization: dectest.D("0.5"), Duration: contract.Duration(time.Minute), Tolerance: canary.DefaultTolerance}
	run := func(srv string, wait time.Duration) canary.Result {
		t.Helper()
		res, err := r.Run(ctx, canary.Canary{Server: srv, GPUs: 1, Model: "H100", Truth: truth, Wait: wait})
		require.NoError(t, err)
		assert.Equal(t, srv, res.Server)
		return res
	}
	for _, tt := range []struct {
		server    string
		wait      time.Duration
		verdict   canary.Verdict
		deviation string
		why       string
	}{
		{"honest", 0, canary.Passed, "0", "U 30 GPU-s for 30 (0%) over T 1m0s: within ±5%; charge 0.06 for 0.06"},
		{"over", 0, canary.Failed, "0.5", "U 45 GPU-s where the job used 30: +50%"},
		{"under", 0, canary.Failed, "-0.5", "U 15 GPU-s where the job used 30: -50%"},
		{"mute", 0, canary.Inconclusive, "0", "voided (not_started)"},
		{"honest", 20 * time.Second, canary.Inconclusive, "0", "still running when judged"},
	} {
		res := run(tt.server, tt.wait)
		assert.Equal(t, tt.verdict, res.Verdict, "%s: %s", tt.server, res.Why)
		assert.Equal(t, tt.deviation, res.Deviation.String(), tt.server)
		assert.Contains(t, res.Why, tt.why)
	}
	h.Run(time.Minute, time.Second) // the last canary settles; the records are read again

	w := contract.Duration(exchange.DefaultCanaryWindow)
	worst := func(s string) string { return recordOf(t, h, s).Canaries.Worst.String() }
	honest := recordOf(t, h, "honest")
	require.NotNil(t, honest.Canaries)
	assert.Equal(t, protocol.Canaries{Window: w, Run: 2, Passed: 1, Inconclusive: 1, Worst: honest.Canaries.Worst}, *honest.Canaries)
	assert.Equal(t, "0", worst("honest"))
	assert.False(t, honest.Demoted, "a canary it did not see settle is no one's fault")
	for _, liar := range []string{"over", "under"} {
		rec := recordOf(t, h, liar)
		require.NotNil(t, rec.Canaries, liar)
		assert.Equal(t, 1, rec.Canaries.Failed, liar)
		assert.True(t, rec.Demoted, liar)
	}
	assert.Equal(t, "0.5", worst("over"))
	assert.Equal(t, "-0.5", worst("under"))
	mute := recordOf(t, h, "mute")
	assert.Equal(t, 1, mute.Canaries.Inconclusive)
	assert.Equal(t, 1, mute.NotStarted, "its record counts the canary's accept it did not start, as anyone's")
	assert.False(t, mute.Demoted)

	for i := range 3 {
		assert.Equal(t, "honest", served(fmt.Sprint("after-", i)), "the liars' records send offers elsewhere")
	}

	// Mended, the meter passes; the canaries name the demoted server, so
	// it is audited still. One pass is not enough against a failure.
	over.Factor = dectest.D("1")
	assert.Equal(t, canary.Passed, run("over", 0).Verdict)
	h.Run(31*time.Second, time.Second)
	assert.True(t, recordOf(t, h, "over").Demoted, "one pass, one failure")
	assert.Equal(t, canary.Passed, run("over", 0).Verdict)
	h.Run(31*time.Second, time.Second)
	rec := recordOf(t, h, "over")
	assert.Equal(t, 2, rec.Canaries.Passed)
	assert.Equal(t, 2, rec.Canaries.PassedSince)
	assert.False(t, rec.Demoted, "two passes since its failure")
	assert.Equal(t, "over", served("mended"), "restored, its ask is the cheapest again")

	// Passes banked do not buy a lie: three passes, then one lie, and
	// the server is demoted again at once.
	assert.Equal(t, canary.Passed, run("over", 0).Verdict)
	over.Factor = dectest.D("1.5")
	assert.Equal(t, canary.Failed, run("over", 0).Verdict)
	h.Run(31*time.Second, time.Second)
	rec = recordOf(t, h, "over")
	assert.Equal(t, protocol.Canaries{Window: w, Run: 5, Passed: 3, Failed: 2, Worst: rec.Canaries.Worst}, *rec.Canaries)
	assert.True(t, rec.Demoted, "three passes before a failure do not outweigh it")
	assert.Equal(t, "honest", served("lied-again"))
	h.Audit()
}
