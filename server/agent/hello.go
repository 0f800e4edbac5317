package agent

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	json "github.com/go-json-experiment/json/v1"
	"github.com/nats-io/nats.go"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/protocol/natswire"
)

// hello registers with the exchange, retrying until it answers or ctx ends,
// and adopts the intervals it asks for. An error reply that retrying
// cannot fix (a refused identity, a malformed hello) is returned.
func (a *Agent) hello(ctx context.Context) error {
	wait := 100 * time.Millisecond
	for {
		msg, err := a.request(ctx, protocol.ServerSubject(a.id, protocol.VerbHello), a.helloBody())
		if err == nil {
			if err = natswire.DecodeError(msg); err == nil {
				var r protocol.HelloReply
				if err = json.Unmarshal(msg.Data, &r); err == nil {
					a.adopt(r)
					return nil
				}
			} else if !retryable(bourse.ErrorCode(err)) {
				return fmt.Errorf("server %s: hello refused: %w", a.id, err)
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		a.log.Warn(a.unanswered(err), "err", err, "in", wait)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait): //wallclock: pacing: a retry's back-off
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// unanswered says who did not answer a hello, so that an operator looks
// in the right place: NATS itself (not connected, at which URL), or the
// exchange (NATS answers, but no exchange listens, or it was slow).
func (a *Agent) unanswered(err error) string {
	switch {
	case !a.nc.IsConnected():
		return fmt.Sprintf("hello not answered: NATS at %s does not answer (not connected: is nats-server running there, and --nats right?); retrying", redactURLs(a.cfg.URL))
	case errors.Is(err, nats.ErrNoResponders):
		return fmt.Sprintf("hello not answered: connected to NATS at %s, but no exchange listens there (is bourse exchange running on this NATS?); retrying", a.nc.ConnectedUrlRedacted())
	}
	return fmt.Sprintf("hello not answered: the exchange did not answer in time (NATS at %s answers); retrying", a.nc.ConnectedUrlRedacted())
}

// redactURLs is a comma-separated list of NATS URLs without the
// passwords any of them holds.
func redactURLs(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		if u, err := url.Parse(strings.TrimSpace(p)); err == nil {
			parts[i] = u.Redacted()
		}
	}
	return strings.Join(parts, ",")
}

func retryable(c bourse.Code) bool {
	return c == bourse.EUnavailable || c == bourse.EInternal || c == bourse.EDeadlineExceeded
}

// request sends body to subject, signed where the agent signs (a hello
// carries the server's ask), and waits for the answer.
func (a *Agent) request(ctx context.Context, subject string, body any) (*nats.Msg, error) {
	msg, err := a.signedMsg(subject, body)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return a.nc.RequestMsgWithContext(rctx, msg)
}

// signedMsg is body encoded for subject, with the server's signature of
// it in protocol.SigHeader where the agent has a Signer.
func (a *Agent) signedMsg(subject string, body any) (*nats.Msg, error) {
	data, err := protocol.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", subject, err)
	}
	msg := nats.NewMsg(subject)
	msg.Data = data
	if a.cfg.Signer != nil {
		sig, err := a.cfg.Signer.Sign(data)
		if err != nil {
			return nil, fmt.Errorf("sign %s: %w", subject, err)
		}
		msg.Header.Set(protocol.SigHeader, sig)
	}
	return msg, nil
}

func (a *Agent) adopt(r protocol.HelloReply) {
	a.status.registered.Store(true)
	a.node.Adopt(r)
	a.readingsMsgs.Store(r.Readings)
	a.adoptReceipts(r.Receipts)
	a.noResponders.Store(0)
	a.mu.Lock()
	defer a.mu.Unlock()
	if r.Heartbeat > 0 {
		a.heartbeat = time.Duration(r.Heartbeat)
	}
	a.changeGap = time.Duration(r.ChangeGap)
	a.log.Info("registered", "heartbeat", a.heartbeat, "reading_every", a.node.ReadingEvery())
}

// beat publishes a heartbeat now, every Heartbeat and soon after the
// node's ask changes (changed), until ctx ends. A heartbeat lost while
// disconnected is replaced by the next. After a reconnect it says hello
// again first: the exchange may have restarted, or forgotten a server it
// did not hear from.
func (a *Agent) beat(ctx context.Context) {
	every := a.heartbeatEvery()
	t := time.NewTicker(every) //wallclock: pacing: heartbeats go out in real time
	defer t.Stop()
	var sent time.Time
	for send := true; ctx.Err() == nil; send = true {
		if send {
			msg, err := a.signedMsg(protocol.ServerSubject(a.id, protocol.VerbHeartbeat), a.beatBody())
			if err == nil {
				err = a.nc.PublishMsg(msg)
			}
			if err != nil {
				a.log.Warn("heartbeat", "err", err)
			}
			sent = time.Now() //wallclock: pacing: changes are said at most every changeGap of real time
		}
		select {
		case <-ctx.Done():
		case <-t.C:
		case <-a.changes:
			// The ask changed: say so soon, so that the exchange routes
			// on what is so, but not more often than the exchange's
			// change gap (a tenth of the least heartbeat interval)
			// however fast jobs come and go.
			select {
			case <-ctx.Done():
			case <-time.After(a.changeEvery() - time.Since(sent)): //wallclock: pacing: as above
			}
		case <-a.repaced:
			// The fleet grew: beat less often from now on; the next
			// heartbeat, at the new interval, says so.
			every = a.heartbeatEvery()
			t.Reset(every)
			send = false
		case <-a.reconnected:
			if err := a.hello(ctx); err != nil {
				// The jobs still run and report; only new work is at stake.
				a.log.Error("hello after reconnecting", "err", err)
			}
			every = a.heartbeatEvery()
			t.Reset(every)
		}
	}
}

// changeGap is how many heartbeats a change may bring about per
// heartbeat interval, at most, where the exchange does not say
// (HelloReply.ChangeGap).
const changeGap = 10

// changeEvery is the least time between heartbeats that changes bring
// about.
func (a *Agent) changeEvery() time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.changeGap > 0 {
		return a.changeGap
	}
	return a.heartbeat / changeGap
}

// onPace takes the exchange's word that the fleet grew: a longer
// heartbeat interval (protocol.DeliverPace). One from an exchange that
// does not pace (it never sends one) is taken all the same.
func (a *Agent) onPace(m *nats.Msg) {
	var p protocol.Pace
	if err := decode(m, &p); err != nil || p.Heartbeat <= 0 {
		a.log.Warn("pace", "err", err, "heartbeat", time.Duration(p.Heartbeat))
		return
	}
	a.mu.Lock()
	changed := a.heartbeat != time.Duration(p.Heartbeat)
	a.heartbeat = time.Duration(p.Heartbeat)
	a.mu.Unlock()
	if changed {
		a.log.Info("heartbeat paced", "heartbeat", time.Duration(p.Heartbeat))
		select {
		case a.repaced <- struct{}{}:
		default: // one is due already
		}
	}
}

// changed says that the node's ask changed (GPUs claimed, released,
// started or freed): a heartbeat goes out soon.
func (a *Agent) changed() {
	select {
	case a.changes <- struct{}{}:
	default: // one is due already
	}
}

func (a *Agent) heartbeatEvery() time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.heartbeat
}

func (a *Agent) helloBody() protocol.Hello { return a.node.Hello(a.now()) }

// beatBody is a heartbeat's body: the hello's, and, to an exchange that
// gives receipts, the contracts whose final readings wait for one. A
// hello never lists them: it may reach an exchange older than receipts,
// which would refuse the field.
func (a *Agent) beatBody() protocol.Hello {
	h := a.helloBody()
	if a.receipts.Load() == receiptsGiven {
		h.Settling = a.held.ids()
	}
	a.mu.Lock()
	if a.changeGap > 0 { // the exchange paces heartbeats: say the interval kept
		h.Heartbeat = contract.Duration(a.heartbeat)
	}
	a.mu.Unlock()
	return h
}
