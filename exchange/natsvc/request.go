package natsvc

import (
	"bytes"

	"github.com/nats-io/nats.go/micro"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/protocol"
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
