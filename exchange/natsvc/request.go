package natsvc

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/micro"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/protocol/natswire"
)

var errBusy = &bourse.Error{Code: bourse.EUnavailable, Message: "the exchange is busy; retry shortly"}

// sender is the party a request subject names: the exchange trusts the
// subject, which NATS permissions tie to the connection's user.
func sender(r micro.Request, role string) (string, error) {
	gotRole, id, _, ok := protocol.Sender(r.Subject())
	if !ok || gotRole != role || protocol.CheckID(id) != nil {
		return "", &bourse.Error{Code: bourse.EInvalid, Field: "subject", Message: "bad request subject " + r.Subject()}
	}
	return id, nil
}

// decode reads a request body strictly (protocol.Unmarshal); an empty body
// is the empty object.
func decode(r micro.Request, v any) error {
	data := r.Data()
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte("{}")
	}
	return protocol.Unmarshal(data, v)
}

func respond(r micro.Request, v any) {
	_ = r.RespondJSON(v)
}

// guard checks a request before its handler sees it. Its reply subject,
// if it has one, must be under the sender's own inbox (_INBOX_<id>.):
// the exchange may publish anywhere, and answering elsewhere would let a
// client have the exchange deliver its words to another party's events
// or a server's control subject. Such a request is not handled and gets
// no answer; it is counted and logged. Then the sender must be within its
// rate (Limits), or it gets rate_limited and nothing is done.
func (s *Service) guard(h micro.HandlerFunc) micro.HandlerFunc {
	return func(r micro.Request) {
		role, id, _, ok := protocol.Sender(r.Subject())
		reply := r.Reply()
		if !ok || (reply != "" && !strings.HasPrefix(reply, protocol.InboxPrefix(id)+".")) {
			s.refused.WithLabelValues("reply_subject").Inc()
			s.warn(role+"."+id, "request with a reply subject outside the sender's inbox refused, not answered",
				"subject", r.Subject(), "reply", reply)
			return
		}
		party, now := role+"."+id, s.cfg.Now()
		if ok, wait := s.limiter.take(party, now); !ok {
			// Refusals are answered at the party's own rate; a flood
			// past that is dropped unanswered, so that answering it does
			// not cost the exchange what serving it would have.
			if ok, _ := s.answers.take(party, now); !ok {
				s.refused.WithLabelValues("dropped").Inc()
				return
			}
			s.refused.WithLabelValues("rate").Inc()
			_ = natswire.RespondError(r, rateLimited(id, fmt.Sprintf("more than %g requests a second", s.serve.Limits.Requests), wait))
			return
		}
		h(r)
	}
}

// warn logs a refusal of party's, at most a line a second per party (a
// burst of 5): a flood of refusals is counted in full by the metrics and
// must not become a flood of log lines.
func (s *Service) warn(party, msg string, args ...any) {
	if ok, _ := s.logLines.take(party, s.cfg.Now()); ok {
		s.cfg.Logger.Warn(msg, args...)
	}
}
