package agent

import (
	json "github.com/go-json-experiment/json/v1"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/protocol"
)

// decode reads a request body, refusing oversized ones.
func decode(m *nats.Msg, v any) error {
	if len(m.Data) > protocol.MaxMessage {
		return bourse.Errorf(bourse.EInvalid, "server.decode", "%d bytes; at most %d", len(m.Data), protocol.MaxMessage)
	}
	if err := json.Unmarshal(m.Data, v); err != nil {
		return &bourse.Error{Code: bourse.EInvalid, Op: "server.decode", Message: m.Subject + ": " + bourse.ErrorMessage(err), Err: err}
	}
	return nil
}

// respond answers a request with body as JSON.
func (a *Agent) respond(m *nats.Msg, body any) {
	data, err := protocol.Marshal(body)
	if err == nil {
		err = m.Respond(data)
	}
	if err != nil {
		a.log.Warn("reply", "subject", m.Subject, "err", err)
	}
}

// respondSigned answers an offer with an accept the agent signs together
// with the offer as it came (protocol.AcceptSigned), so that the exchange
// can hold it to the terms it accepted.
func (a *Agent) respondSigned(m *nats.Msg, d protocol.Decision) {
	data, err := protocol.Marshal(d)
	var sig string
	if err == nil {
		sig, err = a.cfg.Signer.Sign(protocol.AcceptSigned(m.Data, data))
	}
	if err != nil {
		a.log.Warn("signed reply", "subject", m.Subject, "err", err)
		return
	}
	r := nats.NewMsg(m.Reply)
	r.Data = data
	r.Header.Set(protocol.SigHeader, sig)
	if err := m.RespondMsg(r); err != nil {
		a.log.Warn("reply", "subject", m.Subject, "err", err)
	}
}

// respondError answers a request with an error the way the exchange's
// micro endpoints do: the code and message in the Nats-Service-Error
// headers, a protocol.ErrorReply as the body.
func (a *Agent) respondError(m *nats.Msg, err error) {
	code, message, body := protocol.EncodeError(err)
	r := nats.NewMsg(m.Reply)
	r.Data = body
	r.Header.Set(micro.ErrorCodeHeader, code)
	r.Header.Set(micro.ErrorHeader, message)
	if err := m.RespondMsg(r); err != nil {
		a.log.Warn("reply", "subject", m.Subject, "err", err)
	}
}
