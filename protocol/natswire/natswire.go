// Package natswire carries the protocol's messages over NATS: errors as
// nats.go's micro framework writes them, in the Nats-Service-Error-Code and
// Nats-Service-Error headers and an ErrorReply body. It is the one place
// that ties package protocol's shapes to NATS, so that the market's rules,
// which speak in those shapes, do not link NATS.
package natswire

import (
	json "github.com/go-json-experiment/json/v1"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/protocol"
)

// RespondError answers a micro request with err.
func RespondError(r micro.Request, err error) error {
	code, msg, body := protocol.EncodeError(err)
	return r.Error(code, msg, body)
}

// DecodeError returns the *bourse.Error of an error reply, or nil if msg is
// not one.
func DecodeError(msg *nats.Msg) error {
	code := msg.Header.Get(micro.ErrorCodeHeader)
	if code == "" {
		return nil
	}
	var r protocol.ErrorReply
	if json.Unmarshal(msg.Data, &r) == nil && r.Error != nil && r.Error.Code != "" {
		return r.Error
	}
	return &bourse.Error{Code: bourse.Code(code), Message: msg.Header.Get(micro.ErrorHeader)}
}
