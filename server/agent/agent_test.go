package agent_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/protocol/natswire"
	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/server/agent"
)

// seconds is d in decimal seconds.
func seconds(d time.Duration) decimal.Decimal { return decimal.New(int64(d), -9) }

// waitBeat waits for a heartbeat of which ok holds.
func (x *exchange) waitBeat(ok func(protocol.Hello) bool) protocol.Hello {
	x.t.Helper()
	deadline := time.After(3 * time.Second)
	for {
		select {
		case h := <-x.beats:
			if ok(h) {
				return h
			}
		case <-deadline:
			x.t.Fatal("no such heartbeat")
		}
	}
}

func TestAgentLifecycle(t *testing.T) {
	x := newExchange(t, setup{})
	ag := x.startAgent("gpu1", agent.Config{Policy: server.Posted{P: contract.Flat(dectest.D("0.001"))}})
	h := x.waitBeat(func(protocol.Hello) bool { return true })
	assert.Equal(t, 4, h.Free)
	assert.Equal(t, gpus, h.GPUs)
	assert.Equal(t, "reserve", h.Policy)

	tm := terms(2, 10*time.Second, "0.001", "0.02", "0.5", time.Hour)
	d := x.offer("gpu1", protocol.ServerOffer{Offer: "o1", Terms: tm})
	require.True(t, d.Accept, d.Reason)
	assert.Equal(t, contract.Duration(server.DefaultClaimFor), d.ClaimFor)
	again := x.offer("gpu1", protocol.ServerOffer{Offer: "o1", Terms: tm})
	require.True(t, again.Accept, "a retried offer keeps its accept: %s", again.Reason)
	x.waitBeat(func(h protocol.Hello) bool { return h.Free == 2 })

	rs := x.readings("gpu1", "c1")
	st, err := x.start("gpu1", "o1", "c1", tm)
	require.NoError(t, err)
	assert.Equal(t, "c1", st.Contract)
	assert.Equal(t, []int{0, 1}, st.GPUs)
	st2, err := x.start("gpu1", "o1", "c1", tm)
	require.NoError(t, err)
	assert.Equal(t, st, st2, "a repeated start answers the same")
	x.waitBeat(func(h protocol.Hello) bool { return h.Free == 2 && len(h.Running) == 1 && h.Running[0] == "c1" })

	last := decimal.Zero
	for seq := uint64(1); seq <= 3; seq++ {
		rd, id := rs.next()
		assert.Equal(t, seq, rd.Seq)
		assert.Equal(t, protocol.MsgID("gpu1", rd), id)
		assert.True(t, strings.HasPrefix(id, "gpu1:c1:"+strconv.FormatUint(seq, 10)+":"), id)
		assert.False(t, rd.Final)
		assert.True(t, rd.S.Equal(dectest.D("2")), "s = %s", rd.S)
		// Two GPUs half busy: U is the wall time in seconds.
		assert.True(t, rd.U.Equal(seconds(time.Duration(rd.T))), "u = %s, t = %v", rd.U, rd.T)
		assert.True(t, rd.U.GreaterThan(last), "u grows: %s after %s", rd.U, last)
		assert.True(t, rd.EnergyJ.Equal(rd.U.Mul(dectest.D("300"))), "energy = %s", rd.EnergyJ)
		last = rd.U
	}

	m := x.control("gpu1", "c1", contract.ReasonKilled)
	require.NoError(t, natswire.DecodeError(m))
	assert.JSONEq(t, `{}`, string(m.Data))
	final := rs.final(3)
	assert.Equal(t, contract.ReasonKilled, final.Reason)
	assert.Nil(t, final.ExitCode)
	assert.True(t, final.U.Equal(seconds(time.Duration(final.T))), "u = %s, t = %v", final.U, final.T)

	m = x.control("gpu1", "c1", contract.ReasonKilled)
	require.NoError(t, natswire.DecodeError(m), "killing a stopped contract is no error")
	x.waitBeat(func(h protocol.Hello) bool { return h.Free == 4 && len(h.Running) == 0 })
	require.NoError(t, ag.shutdown(t))
}

func TestAgentCounterOffers(t *testing.T) {
	x := newExchange(t, setup{})
	reserve := contract.Flat(dectest.D("0.002"))
	x.startAgent("gpu1", agent.Config{GPUs: gpus[:2], Policy: server.Posted{P: reserve}})

	low := terms(2, 10*time.Second, "0.001", "0.02", "1", time.Hour)
	d := x.offer("gpu1", protocol.ServerOffer{Offer: "o1", Terms: low})
	require.False(t, d.Accept)
	assert.NotEmpty(t, d.Reason)
	require.Len(t, d.Counters, 1)
	c := d.Counters[0]
	assert.Equal(t, "gpu1", c.Server)
	assert.Equal(t, "gpu1", c.Terms.Server)
	assert.True(t, reserve.Equal(c.Terms.P), "counter p = %v", c.Terms.P)
	assert.True(t, c.ValidUntil.After(time.Now()))

	t.Run("changed terms are a new offer", func(t *testing.T) {
		changed := c.Terms
		changed.P, changed.Prepayment = low.P, low.Prepayment
		d := x.offer("gpu1", protocol.ServerOffer{Offer: "o2", Terms: changed, Counter: c.ID})
		assert.False(t, d.Accept)
		assert.Empty(t, d.Code)
	})
	t.Run("taken", func(t *testing.T) {
		d := x.offer("gpu1", protocol.ServerOffer{Offer: "o3", Terms: c.Terms, Counter: c.ID})
		require.True(t, d.Accept, d.Reason)
	})
	t.Run("no GPU free, no counter", func(t *testing.T) {
		good := terms(1, 10*time.Second, "0.002", "0.02", "1", time.Hour)
		d := x.offer("gpu1", protocol.ServerOffer{Offer: "o4", Terms: good})
		assert.False(t, d.Accept)
		assert.Empty(t, d.Counters)
	})
	t.Run("capacity gone", func(t *testing.T) {
		// Release o3 and let a one-GPU offer take half of it: the counter
		// for two GPUs can no longer be honoured.
		data, err := json.Marshal(protocol.Cancel{Offer: "o3"})
		require.NoError(t, err)
		require.NoError(t, x.nc.Publish(protocol.DeliverSubject("gpu1", protocol.DeliverCancel), data))
		good := terms(1, 10*time.Second, "0.002", "0.02", "1", time.Hour)
		n := 0
		require.Eventually(t, func() bool {
			n++ // the cancel and the offers travel on different subscriptions
			return x.offer("gpu1", protocol.ServerOffer{Offer: "o5-" + string(rune('a'+n)), Terms: good}).Accept
		}, 3*time.Second, 20*time.Millisecond)
		d := x.offer("gpu1", protocol.ServerOffer{Offer: "o6", Terms: c.Terms, Counter: c.ID})
		assert.False(t, d.Accept)
		assert.Equal(t, bourse.ECapacityGone, d.Code)
	})
}

func TestAgentStartWithoutClaim(t *testing.T) {
	x := newExchange(t, setup{})
	x.startAgent("gpu1", agent.Config{GPUs: gpus[:2], ClaimFor: 100 * time.Millisecond})
	tm := terms(2, 10*time.Second, "0.001", "0.02", "1", time.Hour)

	require.True(t, x.offer("gpu1", protocol.ServerOffer{Offer: "o1", Terms: tm}).Accept)
	time.Sleep(150 * time.Millisecond) // o1's claim lapses
	require.True(t, x.offer("gpu1", protocol.ServerOffer{Offer: "o2", Terms: tm}).Accept, "the lapsed claim freed its GPUs")
	_, err := x.start("gpu1", "o1", "c1", tm)
	assert.Equal(t, bourse.ECapacityGone, bourse.ErrorCode(err), "o2 claims the GPUs: %v", err)

	time.Sleep(150 * time.Millisecond) // o2's claim lapses too
	st, err := x.start("gpu1", "o1", "c1", tm)
	require.NoError(t, err, "started on free GPUs without a claim")
	assert.Equal(t, []int{0, 1}, st.GPUs)

	m := x.request(protocol.DeliverSubject("gpu1", protocol.DeliverStart),
		protocol.Start{Offer: "o3", Contract: protocol.ContractView{ID: "c2", Terms: tm}})
	assert.Equal(t, string(bourse.ECapacityGone), m.Header.Get("Nats-Service-Error-Code"))
	var reply protocol.ErrorReply
	require.NoError(t, json.Unmarshal(m.Data, &reply))
	assert.Equal(t, bourse.ECapacityGone, reply.Error.Code)
}

func TestAgentStops(t *testing.T) {
	x := newExchange(t, setup{})
	ag := x.startAgent("gpu1", agent.Config{})
	for _, tc := range []struct {
		name   string
		terms  contract.Terms
		reason contract.Reason
		check  func(t *testing.T, final contract.Reading, tm contract.Terms)
	}{
		{"completed", terms(1, 10*time.Second, "0.001", "0.01", "0.5", 150*time.Millisecond), contract.ReasonCompleted,
			func(t *testing.T, final contract.Reading, _ contract.Terms) {
				assert.Equal(t, contract.Duration(150*time.Millisecond), final.T)
				assert.True(t, dectest.D("0.075").Equal(final.U), "u = %s", final.U) // 1 · 0.5 · 0.15
				require.NotNil(t, final.ExitCode)
				assert.Equal(t, 0, *final.ExitCode)
			}},
		{"time limit", terms(1, 200*time.Millisecond, "1", "0.20", "0.5", time.Hour), contract.ReasonTimeLimit,
			func(t *testing.T, final contract.Reading, _ contract.Terms) {
				assert.GreaterOrEqual(t, time.Duration(final.T), 200*time.Millisecond)
				assert.Less(t, time.Duration(final.T), time.Second)
			}},
		{"prepayment exhausted", terms(1, 10*time.Second, "1", "0.10", "1", time.Hour), contract.ReasonExhausted,
			func(t *testing.T, final contract.Reading, tm contract.Terms) {
				due, err := contract.Due(tm, final.Usage(), 2)
				require.NoError(t, err)
				assert.True(t, due.GreaterThanOrEqual(tm.Prepayment), "due %s", due)
				assert.Less(t, time.Duration(final.T), time.Second)
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // on one agent: the three jobs run side by side
			id := "c-" + string(tc.reason)
			rs := x.readings("gpu1", id)
			_, err := x.start("gpu1", "o-"+id, id, tc.terms)
			require.NoError(t, err)
			final := rs.final(0)
			assert.Equal(t, tc.reason, final.Reason)
			assert.True(t, final.Final)
			tc.check(t, final, tc.terms)
		})
	}
	_ = ag
}

func TestAgentShutdown(t *testing.T) {
	x := newExchange(t, setup{})
	ag := x.startAgent("gpu1", agent.Config{})
	tm := terms(1, 10*time.Second, "0.001", "0.01", "1", time.Hour)
	rs := x.readings("gpu1", "c1")
	_, err := x.start("gpu1", "o1", "c1", tm)
	require.NoError(t, err)
	rd, _ := rs.next()
	require.Equal(t, uint64(1), rd.Seq)

	require.NoError(t, ag.shutdown(t))
	final := rs.final(1)
	assert.Equal(t, contract.ReasonShutdown, final.Reason)
	_, err = x.nc.Request(protocol.DeliverSubject("gpu1", protocol.DeliverOffer), []byte(`{}`), time.Second)
	assert.ErrorIs(t, err, nats.ErrNoResponders, "a stopped agent takes no offers")
}

// TestAgentFinalReadingRetried loses the stream while a job stops: the
// final reading is retried until the stream is back.
func TestAgentFinalReadingRetried(t *testing.T) {
	x := newExchange(t, setup{noStream: true})
	x.startAgent("gpu1", agent.Config{})
	_, err := x.start("gpu1", "o1", "c1", terms(1, 10*time.Second, "0.001", "0.01", "1", time.Hour))
	require.NoError(t, err)
	time.Sleep(5 * every) // a few readings are lost: no stream
	require.NoError(t, natswire.DecodeError(x.control("gpu1", "c1", contract.ReasonSuspended)))
	time.Sleep(300 * time.Millisecond)

	x.createStream()
	rs := x.readings("gpu1", "c1")
	rd, id := rs.next()
	assert.True(t, rd.Final, "only the final reading was kept")
	assert.Equal(t, contract.ReasonSuspended, rd.Reason)
	assert.Equal(t, protocol.MsgID("gpu1", rd), id)
	assert.Greater(t, rd.Seq, uint64(1))
}

func TestAgentRejects(t *testing.T) {
	x := newExchange(t, setup{})
	x.startAgent("gpu1", agent.Config{})
	good := terms(1, 10*time.Second, "0.001", "0.01", "1", time.Hour)
	with := func(f func(*contract.Terms)) contract.Terms { t := good; f(&t); return t }
	for _, tc := range []struct {
		name  string
		terms contract.Terms
		code  bourse.Code
	}{
		{"other currency", with(func(t *contract.Terms) { t.Currency = "EUR" }), bourse.EUnknownCurrency},
		{"too fine a prepayment", with(func(t *contract.Terms) { t.Prepayment = dectest.D("0.005") }), bourse.EInvalidOffer},
		{"another server", with(func(t *contract.Terms) { t.Server = "gpu2" }), bourse.EInvalidOffer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := x.offer("gpu1", protocol.ServerOffer{Offer: "o1", Terms: tc.terms})
			assert.False(t, d.Accept)
			assert.Equal(t, tc.code, d.Code, d.Reason)
		})
	}
	t.Run("malformed", func(t *testing.T) {
		m, err := x.nc.Request(protocol.DeliverSubject("gpu1", protocol.DeliverOffer), []byte(`{"terms": 5}`), time.Second)
		require.NoError(t, err)
		var d protocol.Decision
		require.NoError(t, json.Unmarshal(m.Data, &d))
		assert.Equal(t, bourse.EInvalid, d.Code, d.Reason)
	})
	t.Run("control unknown contract", func(t *testing.T) {
		err := natswire.DecodeError(x.control("gpu1", "nope", contract.ReasonKilled))
		assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err))
	})
	t.Run("control bad action", func(t *testing.T) {
		err := natswire.DecodeError(x.control("gpu1", "nope", contract.ReasonCompleted))
		assert.Equal(t, bourse.EInvalid, bourse.ErrorCode(err))
	})
}

func TestAgentHelloRetried(t *testing.T) {
	x := newExchange(t, setup{noHello: true})
	x.runAgent("gpu1", agent.Config{})
	time.Sleep(300 * time.Millisecond) // no exchange yet: the hello finds no responder
	x.answerHello()
	select {
	case <-x.hello:
	case <-time.After(5 * time.Second):
		t.Fatal("the hello was not retried")
	}
	x.waitBeat(func(h protocol.Hello) bool { return h.Free == 4 })
}

func TestAgentHelloRefused(t *testing.T) {
	x := newExchange(t, setup{noHello: true})
	_, err := x.nc.Subscribe(protocol.ServerSubject("*", protocol.VerbHello), func(m *nats.Msg) {
		code, msg, body := protocol.EncodeError(bourse.Errorf(bourse.EPermission, "exchange.hello", "unknown server"))
		r := nats.NewMsg(m.Reply)
		r.Data = body
		r.Header.Set("Nats-Service-Error-Code", code)
		r.Header.Set("Nats-Service-Error", msg)
		_ = m.RespondMsg(r)
	})
	require.NoError(t, err)
	ag := x.runAgent("gpu1", agent.Config{})
	select {
	case err := <-ag.done:
		ag.done <- err
		assert.Equal(t, bourse.EPermission, bourse.ErrorCode(err), "%v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return")
	}
}

// TestAgentReconnects restarts NATS under a running job: the agent
// reconnects, says hello again, and its readings carry on to the final one.
func TestAgentReconnects(t *testing.T) {
	x := newExchange(t, setup{})
	x.startAgent("gpu1", agent.Config{NATSOptions: []nats.Option{nats.ReconnectWait(20 * time.Millisecond)}})
	rs := x.readings("gpu1", "c1")
	_, err := x.start("gpu1", "o1", "c1", terms(1, 10*time.Second, "0.001", "0.01", "1", time.Hour))
	require.NoError(t, err)
	rd, _ := rs.next()
	require.Equal(t, uint64(1), rd.Seq)

	x.restartNATS()
	select {
	case <-x.hello:
	case <-time.After(5 * time.Second):
		t.Fatal("no hello after the reconnect")
	}
	// Wait until a reading after the restart shows the agent publishing
	// again; readings during the outage may be missing.
	rs = x.readings("gpu1", "c1")
	for rd.Seq <= 2 {
		rd, _ = rs.next()
	}
	require.NoError(t, natswire.DecodeError(x.control("gpu1", "c1", contract.ReasonKilled)))
	for !rd.Final {
		next, id := rs.next()
		require.Greater(t, next.Seq, rd.Seq)
		require.Equal(t, protocol.MsgID("gpu1", next), id)
		rd = next
	}
	assert.Equal(t, contract.ReasonKilled, rd.Reason)
}

// TestAgentShippedPermissions runs the agent as user gpu1 of
// docs/nats-server.conf: everything it publishes, subscribes to and
// answers must be within a server's permissions.
func TestAgentShippedPermissions(t *testing.T) {
	x := newExchange(t, setup{shipped: true})
	var mu sync.Mutex
	var violations []string
	x.startAgent("gpu1", agent.Config{NATSOptions: []nats.Option{
		nats.UserInfo("gpu1", "gpu1-secret"),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			mu.Lock()
			defer mu.Unlock()
			violations = append(violations, err.Error())
		}),
	}})
	tm := terms(1, 10*time.Second, "0.001", "0.01", "1", time.Hour)
	require.True(t, x.offer("gpu1", protocol.ServerOffer{Offer: "o1", Terms: tm}).Accept)
	rs := x.readings("gpu1", "c1")
	_, err := x.start("gpu1", "o1", "c1", tm)
	require.NoError(t, err)
	rd, _ := rs.next()
	require.Equal(t, uint64(1), rd.Seq)
	require.NoError(t, natswire.DecodeError(x.control("gpu1", "c1", contract.ReasonKilled)))
	assert.Equal(t, contract.ReasonKilled, rs.final(1).Reason)

	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, violations)
}

// TestAgentPreempts runs a preemptible job on both GPUs; a guaranteed
// offer that pays more takes them: the preemptible job stops with reason
// preempted, and the new one starts on its GPUs.
func TestAgentPreempts(t *testing.T) {
	x := newExchange(t, setup{})
	x.startAgent("gpu1", agent.Config{GPUs: gpus[:2],
		Policy: server.Preempting{Base: server.Posted{P: contract.Flat(dectest.D("0.001"))}}})
	x.waitBeat(func(h protocol.Hello) bool { return h.Policy == "preempting reserve" })

	cheap := terms(2, 10*time.Second, "0.001", "0.02", "1", time.Hour)
	cheap.Preemptible = true
	require.True(t, x.offer("gpu1", protocol.ServerOffer{Offer: "o1", Terms: cheap}).Accept)
	rs1 := x.readings("gpu1", "c1")
	st1, err := x.start("gpu1", "o1", "c1", cheap)
	require.NoError(t, err)
	rd, _ := rs1.next()
	require.Equal(t, uint64(1), rd.Seq)

	t.Run("a preemptible offer preempts nothing", func(t *testing.T) {
		d := x.offer("gpu1", protocol.ServerOffer{Offer: "o2", Terms: cheap})
		assert.False(t, d.Accept)
	})
	t.Run("a guaranteed one at the same price neither", func(t *testing.T) {
		same := cheap
		same.Preemptible = false
		assert.False(t, x.offer("gpu1", protocol.ServerOffer{Offer: "o3", Terms: same}).Accept)
	})

	dear := terms(2, 10*time.Second, "0.002", "0.04", "1", time.Hour)
	d := x.offer("gpu1", protocol.ServerOffer{Offer: "o4", Terms: dear})
	require.True(t, d.Accept, d.Reason)
	assert.False(t, x.offer("gpu1", protocol.ServerOffer{Offer: "o5", Terms: dear}).Accept,
		"c1 is spoken for: a second guaranteed offer cannot preempt it again")

	rs2 := x.readings("gpu1", "c2")
	st2, err := x.start("gpu1", "o4", "c2", dear)
	require.NoError(t, err)
	assert.Equal(t, st1.GPUs, st2.GPUs, "the new job runs on the preempted one's GPUs")
	final := rs1.final(rd.Seq)
	assert.Equal(t, contract.ReasonPreempted, final.Reason)
	assert.False(t, st1.At.Add(time.Duration(final.T)).After(st2.At), "the preempted job stopped before the new one started")
	rd2, _ := rs2.next()
	assert.Equal(t, uint64(1), rd2.Seq)
	assert.False(t, rd2.Final)
	x.waitBeat(func(h protocol.Hello) bool { return h.Free == 0 && len(h.Running) == 1 && h.Running[0] == "c2" })
}

// TestAgentPreemptionLapses lets a preempting accept lapse: the preemptible
// job keeps its GPUs and runs on.
func TestAgentPreemptionLapses(t *testing.T) {
	x := newExchange(t, setup{})
	x.startAgent("gpu1", agent.Config{GPUs: gpus[:2], ClaimFor: 100 * time.Millisecond,
		Policy: server.Preempting{Base: server.Posted{P: contract.Flat(dectest.D("0.001"))}}})
	cheap := terms(2, 10*time.Second, "0.001", "0.02", "1", time.Hour)
	cheap.Preemptible = true
	rs := x.readings("gpu1", "c1")
	_, err := x.start("gpu1", "o1", "c1", cheap)
	require.NoError(t, err)

	dear := terms(1, 10*time.Second, "0.002", "0.02", "1", time.Hour)
	require.True(t, x.offer("gpu1", protocol.ServerOffer{Offer: "o2", Terms: dear}).Accept)
	time.Sleep(150 * time.Millisecond) // o2's claim lapses
	_, err = x.start("gpu1", "o2", "c2", dear)
	assert.Equal(t, bourse.ECapacityGone, bourse.ErrorCode(err), "%v", err)
	rd, _ := rs.next()
	for rd.Seq < 5 {
		require.False(t, rd.Final, "c1 stopped: %s", rd.Reason)
		rd, _ = rs.next()
	}
	assert.True(t, rd.S.Equal(dectest.D("2")), "c1 has both GPUs: s = %s", rd.S)
	require.True(t, x.offer("gpu1", protocol.ServerOffer{Offer: "o3", Terms: dear}).Accept, "c1 is preemptible again")
}

// TestAgentFairUse checks that the agent tells the policy of the client's
// running contracts, claims and last end.
func TestAgentFairUse(t *testing.T) {
	x := newExchange(t, setup{})
	x.startAgent("gpu1", agent.Config{Policy: server.FairUse{Base: server.Posted{}, MaxRunning: 1, Cooldown: time.Hour}})
	tm := terms(1, 10*time.Second, "0.001", "0.01", "1", time.Hour)
	bob := tm
	bob.Client = "bob"

	require.True(t, x.offer("gpu1", protocol.ServerOffer{Offer: "o1", Terms: tm}).Accept)
	d := x.offer("gpu1", protocol.ServerOffer{Offer: "o2", Terms: tm})
	assert.False(t, d.Accept, "alice has claimed one already")
	assert.Contains(t, d.Reason, "1 contracts")
	rs := x.readings("gpu1", "c1")
	_, err := x.start("gpu1", "o1", "c1", tm)
	require.NoError(t, err)
	assert.False(t, x.offer("gpu1", protocol.ServerOffer{Offer: "o3", Terms: tm}).Accept, "alice runs one")
	require.True(t, x.offer("gpu1", protocol.ServerOffer{Offer: "o4", Terms: bob}).Accept, "bob runs none")

	require.NoError(t, natswire.DecodeError(x.control("gpu1", "c1", contract.ReasonKilled)))
	assert.Equal(t, contract.ReasonKilled, rs.final(0).Reason)
	require.Eventually(t, func() bool {
		d = x.offer("gpu1", protocol.ServerOffer{Offer: "o5", Terms: tm})
		return strings.Contains(d.Reason, "cooldown")
	}, 3*time.Second, 20*time.Millisecond, "alice cools down after c1: %s", d.Reason)
	assert.False(t, d.Accept)
}
