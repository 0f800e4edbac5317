package exchange_test

// Servers that lie about usage, and contracts that cannot settle, on a
// manual clock and on both stores. Each test checks the charge of every
// contract against what really ran, not only that the books balance.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/housetest"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/protocol"
)

// running makes client's offer of tm under request id and returns its
// contract, running on the server that took it. The test plays that
// server from then on: the harness's node is silenced, so that only the
// readings the test sends reach the House.
func running(t *testing.T, h *housetest.Harness, client, id string, tm contract.Terms) contract.Contract {
	t.Helper()
	reply := offer(t, h, client, id, tm, 0)
	require.NotNil(t, reply.Contract, "%+v", reply)
	c := contractOf(t, h, client, reply.Contract.ID)
	require.Equal(t, contract.StateRunning, c.State)
	h.Router.Silence(c.Server, true)
	return c
}

// read is a reading of contract id: u GPU-seconds in t, all GPUs
// available, dated at.
func read(id string, seq uint64, u string, t time.Duration, at time.Time, final bool) contract.Reading {
	r := contract.Reading{Contract: id, Seq: seq, U: dectest.D(u), T: contract.Duration(t), S: dectest.D("1"), At: at, Final: final}
	if final {
		r.Reason = contract.ReasonCompleted
	}
	return r
}

// chargedFor requires c to be settled for reason at the charge of usage,
// as the pricing package prices it.
func chargedFor(t *testing.T, c contract.Contract, reason contract.Reason, u contract.Usage) {
	t.Helper()
	require.Equal(t, contract.StateSettled, c.State)
	assert.Equal(t, reason, c.Reason)
	want, err := contract.Charge(c.Terms, u, 2)
	require.NoError(t, err)
	assert.True(t, want.Charge.Equal(c.Charge), "charged %s; what ran costs %s", c.Charge, want.Charge)
	assert.True(t, c.Charge.Add(c.Refund).Equal(c.Terms.Prepayment))
}

// noOpenHold requires a clean audit with every escrow resolved.
func noOpenHold(t *testing.T, h *housetest.Harness) {
	t.Helper()
	r, err := h.Ledger.Audit(context.Background())
	require.NoError(t, err)
	require.True(t, r.OK(), "%s", r)
	assert.Zero(t, r.OpenHolds, "an escrow is stuck")
}

// TestTakeAllForNothing: right after the start a server sends a final
// reading of a year of work at full use, dated in 2100. The exchange
// refuses it by its own clock and the contract settles on what could
// really have run.
func TestTakeAllForNothing(t *testing.T) {
	onStores(t, exchange.Config{}, func(t *testing.T, h *housetest.Harness, _ bool) {
		ctx := context.Background()
		h.Server("gpu1", "H100", 1, nil)
		h.Wallet("alice", "100")
		c := running(t, h, "alice", "r1", job(1, "0.01"))

		greedy := read(c.ID, 1, "600", 8760*time.Hour, time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC), true)
		assert.Error(t, h.House.Count(ctx, "gpu1", greedy), "a reading dated in 2100")
		nowish := greedy
		nowish.Seq, nowish.At = 2, h.Now() // a year of wall time in a second, dated now
		assert.Error(t, h.House.Count(ctx, "gpu1", nowish), "a year's reading a moment after the start")
		got := contractOf(t, h, "alice", c.ID)
		assert.Equal(t, contract.StateRunning, got.State, "an unbelievable reading settled the contract")
		assert.Nil(t, got.Reading, "an unbelievable reading was stored")

		h.Advance(30 * time.Second)
		honest := read(c.ID, 3, "25", h.Now().Sub(c.AcceptedAt), h.Now(), true)
		require.NoError(t, h.House.Count(ctx, "gpu1", honest))
		chargedFor(t, contractOf(t, h, "alice", c.ID), contract.ReasonCompleted, honest.Usage())
		noOpenHold(t, h)
	})
}

// TestMalformedReadings: readings whose numbers no settlement can price
// (70 decimal places, 1e65, a share of 1e-70, negative energy), or with
// a field no reading has, are refused on the way in and never stored, so
// the contract still settles.
func TestMalformedReadings(t *testing.T) {
	onStores(t, exchange.Config{}, func(t *testing.T, h *housetest.Harness, _ bool) {
		ctx := context.Background()
		h.Server("gpu1", "H100", 1, nil)
		h.Wallet("alice", "100")
		c := running(t, h, "alice", "r1", job(1, "0.01"))

		seventy := "0." + strings.Repeat("0", 69) + "1"
		at := h.Now().Format(time.RFC3339Nano)
		for i, body := range []string{
			`{"contract":"` + c.ID + `","seq":1,"u":"` + seventy + `","t":"0.1s","s":"1","energy":"0","at":"` + at + `"}`,
			`{"contract":"` + c.ID + `","seq":2,"u":"1e65","t":"0.1s","s":"1","energy":"0","at":"` + at + `"}`,
			`{"contract":"` + c.ID + `","seq":3,"u":"0","t":"0.1s","s":"1e-70","energy":"0","at":"` + at + `"}`,
			`{"contract":"` + c.ID + `","seq":4,"u":"0","t":"0.1s","s":"1","energy":"-5","at":"` + at + `"}`,
			`{"contract":"` + c.ID + `","seq":5,"u":"0","t":"0.1s","s":"1","energy":"0","at":"` + at + `","extra":1}`,
		} {
			err := h.House.Reading(ctx, "gpu1", c.ID, fmt.Sprintf("gpu1:%s:bad%d", c.ID, i), []byte(body), "")
			assert.Error(t, err, "reading %d", i+1)
		}
		assert.Nil(t, contractOf(t, h, "alice", c.ID).Reading, "a malformed reading was stored")

		final := read(c.ID, 6, "0.2", 200*time.Millisecond, h.Now(), true)
		body, err := protocol.Marshal(final)
		require.NoError(t, err)
		require.NoError(t, h.House.Reading(ctx, "gpu1", c.ID, protocol.MsgID("gpu1", final), body, ""))
		chargedFor(t, contractOf(t, h, "alice", c.ID), contract.ReasonCompleted, final.Usage())
		noOpenHold(t, h)
	})
}

// TestUnregisteredCurrency: a server that said hello in CRED heartbeats
// in USD. It must not win USD offers: it has nowhere to be paid in USD,
// and the contract could never settle.
func TestUnregisteredCurrency(t *testing.T) {
	onStores(t, exchange.Config{}, func(t *testing.T, h *housetest.Harness, _ bool) {
		ctx := context.Background()
		require.NoError(t, h.Ledger.CreateCurrency(ctx, currency.Currency{Code: "USD", Scale: 2}))
		w, err := h.Ledger.OpenAccount(ctx, currency.Account{ID: currency.WalletID("USD", "alice"), Currency: "USD", Kind: currency.Wallet})
		require.NoError(t, err)
		_, err = currency.Do(ctx, h.Ledger, currency.Transfer{Key: "grant/usd", From: currency.IssuanceID("USD"), To: w.ID, Amount: dectest.D("100")})
		require.NoError(t, err)
		h.Server("gpu1", "H100", 1, nil)
		beat := protocol.Hello{Currency: "USD", GPUs: []contract.GPU{{Index: 0, Model: "H100", MemoryMiB: 81920}}, Free: 1}
		for range 5 {
			h.Advance(time.Second)
			beat.At = h.Now()
			err := h.House.Heartbeat(ctx, "gpu1", beat)
			assert.Equal(t, bourse.EPermission, bourse.ErrorCode(err), "a heartbeat in USD: %v", err)
		}

		tm := job(1, "0.01")
		tm.Currency = "USD"
		_, err = h.House.Offer(ctx, "alice", protocol.OfferRequest{RequestID: "usd", Terms: tm})
		assert.Equal(t, bourse.ENoMatch, bourse.ErrorCode(err), "an offer in USD went to a server with no USD account: %v", err)
		b := h.Balance(w.ID)
		assert.True(t, b.Held.IsZero(), "USD escrowed: %s", b.Held)
		noOpenHold(t, h)
	})
}

// TestStuckContractsDoNotBlock: more contracts than one sweep looks at
// cannot settle (their server has no revenue account). The sweep backs
// off from each, so a later silent contract still settles as soon as its
// server is lost; and after StuckLimit the stuck ones end by the fixed
// rule, voided with a full refund since their capture keeps failing.
func TestStuckContractsDoNotBlock(t *testing.T) {
	cfg := exchange.Config{SweepBatch: 20, ServerLostAfter: 10 * time.Second, StuckLimit: time.Minute}
	onStores(t, cfg, func(t *testing.T, h *housetest.Harness, _ bool) {
		const stuck = 30 // more than a sweep's batch
		ctx := context.Background()
		h.Wallet("alice", "100000")
		past := h.Now().Add(-time.Hour)
		for i := range stuck {
			tm := job(1, "0.01")
			tm.Client, tm.Server = "alice", "ghost"
			c := contract.Contract{ID: fmt.Sprintf("ghost-%03d", i), Client: "alice", Server: "ghost", Terms: tm,
				State: contract.StateAccepted, AcceptedAt: past.Add(time.Duration(i) * time.Millisecond), StartDeadline: past.Add(time.Minute)}
			_, _, err := h.Store.Open(ctx, c, "", currency.Reserve{Key: "escrow/" + c.ID, Hold: currency.HoldID(c.ID),
				From: currency.WalletID(housetest.Currency, "alice"), Amount: c.Terms.Prepayment, Deadline: past.Add(24 * time.Hour)})
			require.NoError(t, err)
			_, err = h.Store.Update(ctx, c.ID, func(c *contract.Contract) ([]currency.Op, error) {
				c.State, c.StartedAt, c.LastSeen = contract.StateRunning, past, past
				c.Reading = &contract.Reading{Contract: c.ID, Seq: 1, U: dectest.D("10"), T: contract.Duration(10 * time.Second), S: dectest.D("1"), At: past}
				return nil, nil
			})
			require.NoError(t, err)
		}

		h.Server("gpu1", "H100", 1, nil)
		c := running(t, h, "alice", "r1", job(1, "0.01"))
		h.Advance(time.Second)
		r := read(c.ID, 1, "0.5", time.Second, h.Now(), false)
		require.NoError(t, h.House.Count(ctx, "gpu1", r))
		h.Run(cfg.ServerLostAfter, time.Second)
		assert.Equal(t, contract.StateRunning, contractOf(t, h, "alice", c.ID).State, "silent for ServerLostAfter, not past it")
		h.Run(time.Second, time.Second)
		chargedFor(t, contractOf(t, h, "alice", c.ID), contract.ReasonServerLost, r.Usage())

		list, err := h.Store.Stuck(ctx, 0)
		require.NoError(t, err)
		assert.Len(t, list, stuck, "every ghost contract is marked stuck")
		for _, g := range list {
			assert.Contains(t, g.Stuck.Error, "no account", "%s", g.ID)
			assert.True(t, g.Stuck.Retry.After(g.Stuck.Since), "%s is backed off", g.ID)
		}

		// The fixed rule: voided, the whole prepayment back.
		h.Run(3*time.Minute, time.Second)
		for i := range stuck {
			g := contractOf(t, h, "alice", fmt.Sprintf("ghost-%03d", i))
			assert.Equal(t, contract.StateVoided, g.State)
			assert.Equal(t, contract.ReasonExpired, g.Reason)
			assert.True(t, g.Refund.Equal(g.Terms.Prepayment))
		}
		list, err = h.Store.Stuck(ctx, 0)
		require.NoError(t, err)
		assert.Empty(t, list)
		noOpenHold(t, h)
	})
}

// TestHoldsExpire: a server that keeps sending readings but never a final
// one, long past the time limit. When the hold is due (its start deadline
// plus the time limit, ServerLostAfter and StuckLimit), not before, the
// contract settles on its last reading (time clamped to the limit),
// reason expired: no escrow stays open for ever.
func TestHoldsExpire(t *testing.T) {
	cfg := exchange.Config{ServerLostAfter: 10 * time.Second, StartTimeout: 15 * time.Second, StuckLimit: time.Minute}
	onStores(t, cfg, func(t *testing.T, h *housetest.Harness, _ bool) {
		ctx := context.Background()
		h.Server("gpu1", "H100", 1, nil)
		h.Wallet("alice", "100")
		tm := job(1, "0.01")
		tm.TimeLimit = time.Minute
		tm.Prepayment = tm.CappedPrepayment(2)
		c := running(t, h, "alice", "r1", tm)
		due := c.StartDeadline.Add(tm.TimeLimit + cfg.ServerLostAfter + cfg.StuckLimit)

		for seq := uint64(1); ; seq++ {
			h.Advance(time.Second)
			err := h.House.Count(ctx, "gpu1", read(c.ID, seq, "0.5", h.Now().Sub(c.AcceptedAt), h.Now(), false))
			h.House.Sweep(ctx)
			if got := contractOf(t, h, "alice", c.ID); !got.HoldsEscrow() {
				assert.False(t, h.Now().Before(due), "ended at %v, before its hold was due at %v", h.Now(), due)
				break
			}
			require.NoError(t, err, "a reading of a running contract")
			require.False(t, h.Now().After(due), "the hold was due at %v; it is %v", due, h.Now())
		}
		got := contractOf(t, h, "alice", c.ID)
		require.NotNil(t, got.Reading)
		chargedFor(t, got, contract.ReasonExpired, got.Reading.Usage())
		assert.Greater(t, time.Duration(got.Reading.T), tm.TimeLimit, "it ran past its limit before the rule ended it")
		noOpenHold(t, h)
	})
}

// TestFreshExchangeWaitsForStrandedReadings: an exchange instance took a
// final reading and died before acknowledging it; a fresh instance starts
// after the contract's last counted reading is older than
// ServerLostAfter. It must give the usage stream time to hand the
// reading out again (AckWait) before judging the server lost: the
// contract settles on its final reading, as completed.
func TestFreshExchangeWaitsForStrandedReadings(t *testing.T) {
	cfg := exchange.Config{ServerLostAfter: 10 * time.Second}
	onStores(t, cfg, func(t *testing.T, h *housetest.Harness, _ bool) {
		ctx := context.Background()
		h.Server("gpu1", "H100", 1, nil)
		h.Wallet("alice", "100")
		c := running(t, h, "alice", "r1", job(1, "0.01"))
		h.Advance(time.Second)
		first := read(c.ID, 1, "1", time.Second, h.Now(), false)
		require.NoError(t, h.House.Count(ctx, "gpu1", first))

		// The instance dies, and stays down past ServerLostAfter; its last
		// act was to take the final reading, which the stream hands out
		// again AckWait later.
		h.Advance(2 * time.Second)
		final := read(c.ID, 2, "3", 3*time.Second, h.Now(), true)
		h.Advance(cfg.ServerLostAfter)
		h.House = h.Instance()
		ackWait := h.House.Config().AckWait
		for start := h.Now(); h.Now().Sub(start) < ackWait; {
			h.Advance(time.Second)
			h.House.Sweep(ctx)
		}
		require.Equal(t, contract.StateRunning, contractOf(t, h, "alice", c.ID).State, "judged lost before the stream could hand out its reading")
		require.NoError(t, h.House.Count(ctx, "gpu1", final))
		chargedFor(t, contractOf(t, h, "alice", c.ID), contract.ReasonCompleted, final.Usage())
		noOpenHold(t, h)
	})
}

// TestHeartbeatReplayRefused: a heartbeat says, in its server's name,
// that the server is alive, has room and runs what it runs; a copy sent
// again later (by anyone who captured a signed one) must not. One whose
// at is off the exchange's clock by more than the skew allowed is
// refused, and so is one older than the last heard from its server;
// the server's own next heartbeat is taken. A server gone silent is not
// kept alive by its old words.
func TestHeartbeatReplayRefused(t *testing.T) {
	h := housetest.New(t, exchange.Config{ServerLostAfter: 10 * time.Second})
	h.Server("gpu1", "H100", 2, nil)
	ctx := context.Background()
	captured := h.Router.Nodes["gpu1"].Hello(h.Now())
	h.Advance(time.Second)
	h.Beat()

	err := h.House.Heartbeat(ctx, "gpu1", captured)
	assert.Equal(t, bourse.EInvalid, bourse.ErrorCode(err), "a copy older than the last heard: %v", err)
	ahead := h.Router.Nodes["gpu1"].Hello(h.Now().Add(time.Minute))
	err = h.House.Heartbeat(ctx, "gpu1", ahead)
	assert.Equal(t, bourse.EInvalid, bourse.ErrorCode(err), "an at a minute ahead: %v", err)
	require.NoError(t, h.House.Heartbeat(ctx, "gpu1", h.Router.Nodes["gpu1"].Hello(h.Now())), "its own word, now")

	// Silent for good: a copy of its last heartbeat, sent on every
	// second, does not keep it live.
	last := h.Router.Nodes["gpu1"].Hello(h.Now())
	h.Router.Silence("gpu1", true)
	for range 20 {
		h.Advance(time.Second)
		_ = h.House.Heartbeat(ctx, "gpu1", last)
	}
	assert.Zero(t, h.House.LiveServers(), "a server kept live by copies of its heartbeat")
}
