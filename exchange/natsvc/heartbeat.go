package natsvc

import (
	"bytes"
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// handleHeartbeat passes a heartbeat to the House; every instance hears
// every heartbeat, so each can route, and none answers. A heartbeat that
// says what its server's last said, at a later time, is heard by its
// time alone (echoes); one that says an interval shorter than the pace's
// now has its server told the new one (exchange/pace.go).
func (s *Service) handleHeartbeat(m *nats.Msg) {
	role, id, _, ok := protocol.Sender(m.Subject)
	if !ok || role != protocol.RoleServer {
		return
	}
	// Heartbeats count against the server's rate, as its requests do: a
	// server speaks once a second, one that floods is not heard. Unlike
	// requests, which the queue group spreads, every instance hears every
	// heartbeat, so each holds them to the server's whole rate, not to
	// its share (peers.go): with a share, enough instances (or a low
	// rate) would leave a server's every heartbeat over it, and the
	// server unheard. The buckets are the heartbeats' own, by server.
	now := s.cfg.Now()
	if ok, _ := s.beats.take(id, now); !ok {
		s.refused.WithLabelValues("heartbeat").Inc()
		s.warn(role+"."+id, "heartbeats over the server's rate ignored", "server", id)
		return
	}
	body, at, every, same := s.echoes.same(id, m.Data, now)
	if same {
		heard, err := s.house.HeartbeatAgain(id, at)
		if heard {
			if err == nil {
				s.pace(id, every)
			}
			return
		}
	}
	// Decoded here and checked by the House, once.
	var h protocol.Hello
	if err := protocol.Unmarshal(m.Data, &h); err != nil {
		s.echoes.forget(id)
		return
	}
	asked := h.Ask != nil
	s.checkAsk(id, m.Data, m.Header.Get(protocol.SigHeader), &h)
	if err := s.house.Heartbeat(context.Background(), id, h); err != nil || asked && h.Ask == nil || body == nil {
		// Heard in full again next time: refused, its ask dropped for
		// its signature, or not in the form an echo is read in.
		s.echoes.forget(id)
		return
	}
	s.echoes.keep(id, body, time.Duration(h.Heartbeat), now)
	s.pace(id, time.Duration(h.Heartbeat))
}

// pace tells server to heartbeat less often where the House says so: its
// heartbeat said it keeps every, shorter than the pace's now.
func (s *Service) pace(server string, every time.Duration) {
	d := s.house.Pace(server, every)
	if d <= 0 {
		return
	}
	body, err := protocol.Marshal(protocol.Pace{Heartbeat: contract.Duration(d)})
	if err == nil {
		_ = s.nc.Publish(protocol.DeliverSubject(server, protocol.DeliverPace), body)
	}
}

// echoes keeps what each server's last heartbeat heard in full said, its
// time aside: most heartbeats say again what the last said (a server
// whose ask and contracts did not change), and comparing their bytes
// costs a small part of decoding and checking them. Only heartbeats
// written as protocol.Marshal writes them (the "at" member last) are
// read so; any other is heard in full. An echo is kept for echoFor: the
// heartbeat after that is heard in full, so that a signed ask is checked
// again against keys reloaded meanwhile.
type echoes struct {
	mu sync.Mutex
	by map[string]echo
}

type echo struct {
	body  []byte // the heartbeat up to its ,"at" member
	every time.Duration
	until time.Time
}

// echoFor is how long an echo stands.
const echoFor = time.Minute

// atMember is how the last member of a heartbeat, its time, begins.
var atMember = []byte(`,"at":"`)

// splitAt parses a heartbeat that ends in its "at" member: what comes
// before it, and its time. The member is the message's last: an
// unescaped quote after a comma begins a key, and the object's closing
// brace follows its value.
func splitAt(data []byte) (body []byte, at time.Time, ok bool) {
	n := len(data)
	if n < 2 || data[n-1] != '}' || data[n-2] != '"' {
		return nil, time.Time{}, false
	}
	i := bytes.LastIndex(data, atMember)
	if i < 0 {
		return nil, time.Time{}, false
	}
	v := data[i+len(atMember) : n-2]
	if bytes.ContainsAny(v, `"\`) {
		return nil, time.Time{}, false
	}
	at, err := time.Parse(time.RFC3339Nano, string(v))
	if err != nil {
		return nil, time.Time{}, false
	}
	return data[:i], at, true
}

// same splits data and says whether it says what server's last heartbeat
// heard in full said: then at is its time and every the interval it
// said. body is data's part before its time, nil where data is not in
// that form.
func (e *echoes) same(server string, data []byte, now time.Time) (body []byte, at time.Time, every time.Duration, same bool) {
	body, at, ok := splitAt(data)
	if !ok {
		return nil, time.Time{}, 0, false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	last, ok := e.by[server]
	if !ok || now.After(last.until) || !bytes.Equal(last.body, body) {
		return body, at, 0, false
	}
	return body, at, last.every, true
}

// keep records body as server's last heartbeat heard in full.
func (e *echoes) keep(server string, body []byte, every time.Duration, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.by == nil {
		e.by = map[string]echo{}
	}
	last := e.by[server]
	e.by[server] = echo{body: append(last.body[:0], body...), every: every, until: now.Add(echoFor)}
}

// forget has server's next heartbeat heard in full.
func (e *echoes) forget(server string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.by, server)
}
