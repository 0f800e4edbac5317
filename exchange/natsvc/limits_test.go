package natsvc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/mem"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/memstore"
	"github.com/bourse/bourse/exchange/natsvc"
	"github.com/bourse/bourse/internal/metrictest"
	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/protocol/natswire"
)

// limitedMarket is newMarket with the exchange restarted under lim, its
// metrics in reg.
func limitedMarket(t testing.TB, maxInFlight int, lim natsvc.Limits) (*market, *prometheus.Registry) {
	t.Helper()
	m := newMarket(t, nil)
	m.exStop()
	reg := prometheus.NewRegistry()
	m.cfg.MaxInFlight, m.cfg.Limits, m.cfg.Metrics = maxInFlight, lim, reg
	m.startExchange()
	return m, reg
}

func refused(t testing.TB, reg *prometheus.Registry, reason string) float64 {
	t.Helper()
	return metrictest.Counter(t, reg, "bourse_exchange_refused_total", "reason", reason)
}

// heartbeats has the servers speak every 100 ms, as running agents do, so
// that none is lost while a test runs, until the returned stop.
func heartbeats(servers ...*scripted) (stop func()) {
	done := make(chan struct{})
	var beats sync.WaitGroup
	for _, s := range servers {
		beats.Go(func() {
			for {
				select {
				case <-done:
					return
				case <-time.After(100 * time.Millisecond):
					body, _ := json.Marshal(protocol.Hello{Currency: cred, GPUs: s.gpus, Free: len(s.gpus), At: time.Now().UTC()})
					_ = s.nc.Publish(protocol.ServerSubject(s.id, protocol.VerbHeartbeat), body)
				}
			}
		})
	}
	return func() { close(done); beats.Wait() }
}

// TestReplySubjectChecked: a request whose reply subject is not under the
// sender's own inbox is neither handled nor answered, so that alice
// cannot have the exchange publish into bob's events, a server's control
// subject or bob's inbox.
func TestReplySubjectChecked(t *testing.T) {
	m, reg := limitedMarket(t, 0, natsvc.Limits{})
	m.wallet("alice", "100")
	m.wallet("bob", "100")
	alice := natstest.Connect(t, m.ns, protocol.InboxPrefix("alice"))
	bob := natstest.Connect(t, m.ns, protocol.InboxPrefix("bob"))

	var heard atomic.Int32
	for _, subj := range []string{"bourse.v1.deliver.bob.>", "bourse.v1.deliver.gpu1.>", "_INBOX_bob.>", "_INBOX_alicex.>"} {
		sub, err := bob.Subscribe(subj, func(*nats.Msg) { heard.Add(1) })
		require.NoError(t, err)
		t.Cleanup(func() { _ = sub.Unsubscribe() })
	}
	require.NoError(t, bob.Flush())

	body := []byte(`{"currency":"CRED"}`)
	for _, reply := range []string{"bourse.v1.deliver.bob.event", "bourse.v1.deliver.gpu1.control", "_INBOX_bob.stolen", "_INBOX_alicex.x", "_INBOX_alice"} {
		require.NoError(t, alice.PublishRequest(protocol.ClientSubject("alice", protocol.VerbBalance), reply, body))
	}
	// An offer under a foreign reply subject is not made either.
	offer, _ := json.Marshal(protocol.OfferRequest{RequestID: "hijack", Terms: terms("alice")})
	require.NoError(t, alice.PublishRequest(protocol.ClientSubject("alice", protocol.VerbOffer), "bourse.v1.deliver.bob.event", offer))
	require.NoError(t, alice.Flush())

	// The same request from alice's own inbox is answered: the refusals
	// above were not for want of an exchange.
	msg, err := alice.Request(protocol.ClientSubject("alice", protocol.VerbBalance), body, 2*time.Second)
	require.NoError(t, err)
	require.NoError(t, natswire.DecodeError(msg))
	waitFor(t, "six refusals counted", func() bool { return refused(t, reg, "reply_subject") == 6 })
	assert.Zero(t, heard.Load(), "nothing reached another party's subjects")
	assert.True(t, m.balance(currency.WalletID(cred, "alice")).Held.IsZero(), "no escrow for the hijacked offer")
	assert.Equal(t, 0, m.audit().Holds)
}

// TestRateLimited: over its rate a client gets rate_limited with the time
// to wait, and nothing is done; after that wait it is served again.
func TestRateLimited(t *testing.T) {
	m, reg := limitedMarket(t, 0, natsvc.Limits{Requests: 5, Burst: 5})
	m.wallet("alice", "100")
	nc := natstest.Connect(t, m.ns, protocol.InboxPrefix("alice"))
	ask := func() error {
		msg, err := nc.Request(protocol.ClientSubject("alice", protocol.VerbBalance), []byte(`{"currency":"CRED"}`), 2*time.Second)
		require.NoError(t, err)
		return natswire.DecodeError(msg)
	}
	for i := range 5 {
		require.NoError(t, ask(), "request %d of a burst of 5", i)
	}
	err := ask()
	require.Error(t, err)
	var be *bourse.Error
	require.ErrorAs(t, err, &be)
	assert.Equal(t, bourse.ERateLimited, be.Code)
	assert.Greater(t, be.RetryAfterMS, int64(0))
	assert.LessOrEqual(t, be.RetryAfterMS, int64(200), "one token at 5 a second")
	assert.Contains(t, be.Message, "retry after")
	assert.Equal(t, 1.0, refused(t, reg, "rate"))

	time.Sleep(time.Duration(be.RetryAfterMS) * time.Millisecond)
	assert.NoError(t, ask(), "served again after the wait it was told")

	// Past its rate of answers too, a flood is dropped unanswered.
	var answered, unanswered int
	for range 20 {
		_, err := nc.Request(protocol.ClientSubject("alice", protocol.VerbBalance), []byte(`{"currency":"CRED"}`), 100*time.Millisecond)
		if err != nil {
			unanswered++
		} else {
			answered++
		}
	}
	assert.Greater(t, unanswered, 5, "answered %d", answered)
	assert.Equal(t, float64(unanswered), refused(t, reg, "dropped"))
}

// TestFloodLeavesOthersAlone is the flood the issue describes: mallory
// fires hundreds of offers naming a registered server that never answers,
// each holding a negotiation for a second. Her share of the slots runs out
// (rate_limited, with a retry-after) and alice's offers all become
// contracts, though the slots in all are fewer than mallory's offers.
func TestFloodLeavesOthersAlone(t *testing.T) {
	m, reg := limitedMarket(t, 64, natsvc.Limits{Requests: 10000, Burst: 10000, InFlight: 16})
	m.wallet("alice", "1000")
	m.wallet("mallory", "1000")
	gpu1 := m.scriptedServer("gpu1", 64, accept)
	mute := m.scriptedServer("mute", 64, accept)
	mute.muteOffers.Store(true)

	defer heartbeats(gpu1, mute)()

	// Mallory fires her offers without waiting for answers, which come to
	// her inbox.
	mal := natstest.Connect(t, m.ns, protocol.InboxPrefix("mallory"))
	var limited, unavailable atomic.Int32
	answers, err := mal.Subscribe("_INBOX_mallory.flood", func(msg *nats.Msg) {
		var be *bourse.Error
		if errors.As(natswire.DecodeError(msg), &be) {
			switch be.Code {
			case bourse.ERateLimited:
				if be.RetryAfterMS > 0 {
					limited.Add(1)
				}
			case bourse.EUnavailable:
				unavailable.Add(1)
			}
		}
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = answers.Unsubscribe() })
	flood := terms("mallory")
	flood.Server = "mute"
	for i := range 300 {
		body, _ := json.Marshal(protocol.OfferRequest{RequestID: fmt.Sprintf("flood-%d", i), Terms: flood})
		require.NoError(t, mal.PublishRequest(protocol.ClientSubject("mallory", protocol.VerbOffer), "_INBOX_mallory.flood", body))
	}
	require.NoError(t, mal.Flush())
	waitFor(t, "mallory rate limited", func() bool { return limited.Load() > 0 })

	alice := m.client("alice")
	var failed []error
	var mu sync.Mutex
	var offers sync.WaitGroup
	for i := range 40 {
		offers.Go(func() {
			r, err := alice.Offer(context.Background(), fmt.Sprintf("honest-%d", i), terms("alice"))
			if err == nil && r.Contract == nil {
				err = fmt.Errorf("no contract: %+v", r)
			}
			if err != nil {
				mu.Lock()
				failed = append(failed, err)
				mu.Unlock()
			}
		})
	}
	offers.Wait()
	assert.Empty(t, failed, "alice's offers under mallory's flood")
	assert.Greater(t, refused(t, reg, "in_flight"), 250.0, "mallory's share is 16 of 300")
	assert.Zero(t, unavailable.Load(), "mallory never filled the exchange's 64 slots")
	t.Logf("mallory: %d rate limited", limited.Load())
}

// TestUsageStreamBounded: the usage stream is a bounded queue. A message
// over 64 KiB (a readings message's bound; a reading alone is held to
// 8 KiB by the exchange) is refused at the publish; readings for a made-up contract
// are counted, refused and gone, not kept for days; and while no
// exchange reads, one contract's readings past their bound are refused
// to the publisher, who keeps them, while another contract's still go in.
func TestUsageStreamBounded(t *testing.T) {
	m := newMarket(t, nil)
	srv := m.scriptedServer("gpu1", 1, accept)
	ctx := context.Background()
	stream, err := srv.js.Stream(ctx, protocol.UsageStream)
	require.NoError(t, err)
	info, err := stream.Info(ctx)
	require.NoError(t, err)
	assert.Equal(t, jetstream.InterestPolicy, info.Config.Retention)
	assert.Equal(t, jetstream.DiscardNew, info.Config.Discard)
	assert.Equal(t, int32(protocol.MaxReadings), info.Config.MaxMsgSize)
	assert.Equal(t, int64(1<<30), info.Config.MaxBytes)

	publish := func(contract, msgID string, body []byte) error {
		msg := nats.NewMsg(protocol.UsageSubject(srv.id, contract))
		msg.Data = body
		_, err := srv.js.PublishMsg(ctx, msg, jetstream.WithMsgID(msgID))
		return err
	}
	huge := []byte(`{"contract":"c-made-up","seq":1,"energy":"` + strings.Repeat("9", 900<<10) + `"}`)
	assert.Error(t, publish("c-made-up", "gpu1:huge", huge), "a 900 KB reading is not stored")

	for i := range 50 {
		r := reading("c-made-up", uint64(i+1), "1", 1, false)
		body, _ := json.Marshal(r)
		require.NoError(t, publish("c-made-up", protocol.MsgID(srv.id, r), body))
	}
	waitFor(t, "the made-up contract's readings consumed and gone", func() bool {
		info, err := stream.Info(ctx)
		return err == nil && info.State.Msgs == 0
	})

	// No exchange reads now; the bound per contract is 5.
	m.exStop()
	m.cfg.StreamPerContract = 5
	m.startExchange()
	m.exStop()
	for i := range 5 {
		r := reading("c-waiting", uint64(i+1), "1", 1, false)
		body, _ := json.Marshal(r)
		require.NoError(t, publish("c-waiting", protocol.MsgID(srv.id, r), body))
	}
	info, err = stream.Info(ctx)
	require.NoError(t, err)
	t.Logf("%d bytes stored a reading", info.State.Bytes/info.State.Msgs) // docs/operations.md's disk figure
	r := reading("c-waiting", 6, "1", 1, false)
	body, _ := json.Marshal(r)
	assert.Error(t, publish("c-waiting", protocol.MsgID(srv.id, r), body), "the sixth waiting reading of one contract is refused to its server")
	r = reading("c-other", 1, "1", 1, false)
	body, _ = json.Marshal(r)
	assert.NoError(t, publish("c-other", protocol.MsgID(srv.id, r), body), "another contract's reading still goes in")
}

// TestUsageStreamUpgrade: a stream an earlier exchange made (limits
// retention, kept 7 days, unbounded) is switched to the bounded queue
// when an exchange starts on it, with what it held kept.
func TestUsageStreamUpgrade(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns, "")
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	ctx := context.Background()
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: protocol.UsageStream, Subjects: []string{protocol.UsageSubjects},
		Duplicates: 10 * time.Minute, MaxAge: 7 * 24 * time.Hour})
	require.NoError(t, err)
	_, err = js.Publish(ctx, protocol.UsageSubject("gpu1", "c-1"), []byte(`{}`))
	require.NoError(t, err)

	store := memstore.New(mem.New(mem.Options{}))
	ex, err := natsvc.Start(ctx, natsvc.Config{Conn: nc, Config: exchange.Config{Store: store}})
	require.NoError(t, err, "an exchange starts on the stream an earlier one made")
	t.Cleanup(ex.Stop)
	s, err := js.Stream(ctx, protocol.UsageStream)
	require.NoError(t, err)
	info, err := s.Info(ctx)
	require.NoError(t, err)
	assert.Equal(t, jetstream.InterestPolicy, info.Config.Retention)
	assert.Equal(t, int64(1<<30), info.Config.MaxBytes)
}

// TestHeartbeatFlood: a server's heartbeats count against its rate: a
// flood of them is ignored past it, counted, and the server stays
// registered on the ones within it.
func TestHeartbeatFlood(t *testing.T) {
	m, reg := limitedMarket(t, 0, natsvc.Limits{Requests: 10, Burst: 10})
	srv := m.scriptedServer("gpu1", 2, accept)
	body, _ := json.Marshal(protocol.Hello{Currency: cred, GPUs: srv.gpus, Free: len(srv.gpus), At: time.Now().UTC()})
	for range 400 {
		require.NoError(t, srv.nc.Publish(protocol.ServerSubject("gpu1", protocol.VerbHeartbeat), body))
	}
	require.NoError(t, srv.nc.Flush())
	waitFor(t, "the flood counted", func() bool { return refused(t, reg, "heartbeat") >= 300 })
	assert.Equal(t, 1, m.ex.LiveServers())
}

// TestLimitsForTheWholeMarket: with three instances in the queue group,
// each allows a party a third of its limits, so a client bursting 60
// requests at a market that allows it 12 at once gets at most 12 through,
// not three instances' worth (36, as before the shares).
func TestLimitsForTheWholeMarket(t *testing.T) {
	m, _ := limitedMarket(t, 0, natsvc.Limits{Requests: 0.01, Burst: 12})
	m.cfg.Metrics = nil // each instance registers its own
	m.startExchange()
	m.startExchange()
	m.wallet("alice", "100")
	time.Sleep(2500 * time.Millisecond) // the instances hear one another (every second)
	nc := natstest.Connect(t, m.ns, protocol.InboxPrefix("alice"))
	served := 0
	for range 60 {
		// Refused ones past the rate of answers go unanswered: wait little.
		msg, err := nc.Request(protocol.ClientSubject("alice", protocol.VerbBalance), []byte(`{"currency":"CRED"}`), 200*time.Millisecond)
		if err == nil && natswire.DecodeError(msg) == nil {
			served++
		}
	}
	assert.LessOrEqual(t, served, 12, "the market's burst of 12, a third at each instance")
	assert.GreaterOrEqual(t, served, 6, "each instance serves its share")
}

// TestHeartbeatsAtEveryInstance: every instance hears every heartbeat,
// so each holds a server's heartbeats to its whole rate, not to the share
// of it that each allows its requests. A market that allows a party 3
// requests a second, with three instances (a share of 1 a second each),
// hears a server that speaks twice a second at every instance.
func TestHeartbeatsAtEveryInstance(t *testing.T) {
	m, reg := limitedMarket(t, 0, natsvc.Limits{Requests: 3, Burst: 3})
	first := m.ex
	m.cfg.Metrics = nil // each instance registers its own
	m.startExchange()
	m.startExchange()
	time.Sleep(2500 * time.Millisecond) // the instances hear one another (every second)
	srv := m.scriptedServer("gpu1", 2, accept)
	for range 8 {
		body, _ := json.Marshal(protocol.Hello{Currency: cred, GPUs: srv.gpus, Free: len(srv.gpus), At: time.Now().UTC()})
		require.NoError(t, srv.nc.Publish(protocol.ServerSubject("gpu1", protocol.VerbHeartbeat), body))
		time.Sleep(500 * time.Millisecond)
	}
	assert.Zero(t, refused(t, reg, "heartbeat"), "heartbeats within the server's rate ignored")
	for i, ex := range []*natsvc.Service{first, m.ex} {
		assert.Equal(t, 1, ex.LiveServers(), "instance %d", i)
	}
}
