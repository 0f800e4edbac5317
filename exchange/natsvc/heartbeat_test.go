package natsvc

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// seen is when the Service last heard server, and what it holds of its
// heartbeat.
func (rig *beatRig) seen(id string) protocol.Server {
	rig.tb.Helper()
	for _, srv := range rig.s.house.Servers("") {
		if srv.ID == id {
			return srv
		}
	}
	rig.tb.Fatalf("%s not live", id)
	return protocol.Server{}
}

// dropped counts the asks dropped for their signatures.
func (rig *beatRig) dropped() float64 {
	var m dto.Metric
	require.NoError(rig.tb, rig.s.refused.WithLabelValues("ask_unsigned").Write(&m))
	return m.GetCounter().GetValue()
}

// TestHeartbeatEcho: a heartbeat that says what its server's last said,
// at a later time, keeps the server live by its time alone; a copy from
// before the last is still refused, and one that says something new is
// heard in full.
func TestHeartbeatEcho(t *testing.T) {
	rig := newBeatRig(t, 2, false, 0)
	h := rig.nodes["s0000"].Hello(rig.Now())
	rig.s.handleHeartbeat(rig.msg("s0000", h, false))
	first := rig.Now()

	rig.advance(2 * time.Second)
	h.At = rig.Now()
	rig.s.handleHeartbeat(rig.msg("s0000", h, false))
	assert.Equal(t, rig.Now(), rig.seen("s0000").Seen, "an echo was not heard")
	_, _, _, same := rig.s.echoes.same("s0000", rig.msg("s0000", h, false).Data, rig.Now())
	assert.True(t, same, "the heartbeat is not kept as the server's last")

	rig.advance(time.Second)
	h.At = first // a copy of the first, sent again
	rig.s.handleHeartbeat(rig.msg("s0000", h, false))
	assert.Equal(t, rig.Now().Add(-time.Second), rig.seen("s0000").Seen, "a stale copy was heard")

	h.At, h.Free = rig.Now(), 3
	rig.s.handleHeartbeat(rig.msg("s0000", h, false))
	got := rig.seen("s0000")
	assert.Equal(t, rig.Now(), got.Seen)
	assert.Equal(t, 3, got.Free, "a heartbeat that says something new was not heard in full")
}

// TestHeartbeatEchoSigned: where asks must be signed, an echo's ask is
// the one its server signed in the heartbeat heard in full, for
// echoFor; after that the heartbeat is heard in full, its signature
// checked again. A heartbeat whose ask was dropped for its signature is
// never an echo: the next is checked again, and dropped again.
func TestHeartbeatEchoSigned(t *testing.T) {
	rig := newBeatRig(t, 2, true, 0)
	h := rig.nodes["s0000"].Hello(rig.Now())
	require.NotNil(t, h.Ask)
	rig.s.handleHeartbeat(rig.msg("s0000", h, true))
	require.NotNil(t, rig.seen("s0000").Ask, "a signed ask dropped")

	unsigned := func(h protocol.Hello) *nats.Msg { m := rig.msg("s0000", h, false); return m }
	rig.advance(time.Second)
	h.At = rig.Now()
	rig.s.handleHeartbeat(unsigned(h))
	assert.NotNil(t, rig.seen("s0000").Ask, "an echo of a signed ask: the ask its server signed")

	rig.advance(echoFor + time.Second)
	h.At = rig.Now()
	rig.s.handleHeartbeat(unsigned(h))
	assert.Nil(t, rig.seen("s0000").Ask, "an unsigned ask taken past echoFor")
	dropped := rig.dropped()

	rig.advance(time.Second)
	h.At = rig.Now()
	rig.s.handleHeartbeat(unsigned(h))
	assert.Nil(t, rig.seen("s0000").Ask)
	assert.Equal(t, dropped+1, rig.dropped(),
		"a heartbeat whose ask was dropped taken as an echo")
}

// TestPaceTold: a server whose heartbeat says it keeps an interval
// shorter than the pace's is told the pace's once, on its pace subject;
// one that says none (older than pacing) is told nothing.
func TestPaceTold(t *testing.T) {
	rig := newBeatRig(t, 3, false, 1) // 3 servers at 1 a second: 3 s
	told := make(chan *nats.Msg, 8)
	sub, err := rig.s.nc.ChanSubscribe(protocol.DeliverSubject("*", protocol.DeliverPace), told)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	require.NoError(t, rig.s.nc.Flush())

	h := rig.nodes["s0000"].Hello(rig.Now())
	h.Heartbeat = contract.Duration(time.Second)
	rig.s.handleHeartbeat(rig.msg("s0000", h, false))
	select {
	case m := <-told:
		assert.Equal(t, protocol.DeliverSubject("s0000", protocol.DeliverPace), m.Subject)
		var p protocol.Pace
		require.NoError(t, protocol.Unmarshal(m.Data, &p))
		assert.Equal(t, contract.Duration(3*time.Second), p.Heartbeat)
	case <-time.After(5 * time.Second):
		t.Fatal("no pace told")
	}
	rig.advance(time.Second)
	h.At = rig.Now()
	rig.s.handleHeartbeat(rig.msg("s0000", h, false)) // an echo, not told again

	old := rig.nodes["s0001"].Hello(rig.Now())
	rig.s.handleHeartbeat(rig.msg("s0001", old, false))
	require.NoError(t, rig.s.nc.Flush())
	select {
	case m := <-told:
		t.Errorf("told again: %s %s", m.Subject, m.Data)
	case <-time.After(300 * time.Millisecond):
	}
}

// TestSplitAt: a heartbeat's time is read from its bytes only where it
// is the message's last member, a string without escapes.
func TestSplitAt(t *testing.T) {
	for _, c := range []struct {
		data string
		ok   bool
	}{
		{`{"currency":"CRED","at":"2026-12-02T12:00:00Z"}`, true},
		{`{"currency":"CRED","at":"2026-12-02T12:00:00.123456789+01:00"}`, true},
		{`{"at":"2026-12-02T12:00:00Z"}`, false}, // no comma before it: not our writer's form
		{`{"currency":"CRED","at":"2026-12-02T12:00:00Z","free":1}`, false},
		{`{"currency":"CRED","at":"2026-12-02T12:00:00Z"} `, false},
		{`{"currency":"CRED","at":"2026-12-02T12:00:00\u005a"}`, false},
		{`{"currency":"CRED","at":"yesterday"}`, false},
		{`{"policy":"x\",\"at\":\"2026-12-02T12:00:00Z"}`, false},
		{`"}`, false},
	} {
		body, at, ok := splitAt([]byte(c.data))
		if ok != c.ok {
			t.Errorf("splitAt(%s): ok %v, want %v", c.data, ok, c.ok)
			continue
		}
		if ok && (string(body) != `{"currency":"CRED"` || at.IsZero()) {
			t.Errorf("splitAt(%s) = %s, %v", c.data, body, at)
		}
	}
}
