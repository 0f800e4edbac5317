package exchange

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

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

// decode reads a request body strictly: bounded, unknown fields refused,
// nothing after the JSON value.
func decode(r micro.Request, v any) error {
	data := r.Data()
	if len(data) > protocol.MaxMessage {
		return &bourse.Error{Code: bourse.EInvalid, Message: fmt.Sprintf("request of %d bytes exceeds the limit of %d", len(data), protocol.MaxMessage)}
	}
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badJSON(err)
	}
	if dec.More() {
		return &bourse.Error{Code: bourse.EInvalid, Message: "data after the JSON value"}
	}
	return nil
}

// badJSON keeps a decoder's typed error (the contract package's strict
// decoder returns *bourse.Error) or wraps a plain one.
func badJSON(err error) error {
	if bourse.ErrorCode(err) != bourse.EInternal {
		return err
	}
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "json: ")
	return &bourse.Error{Code: bourse.EInvalid, Message: "malformed request: " + msg}
}

func respond(r micro.Request, v any) {
	_ = r.RespondJSON(v)
}

// checkRequestID accepts ids a client can reuse on retries.
func checkRequestID(id string) error {
	if id == "" || len(id) > 128 || strings.ContainsAny(id, " \t\r\n\x00") {
		return &bourse.Error{Code: bourse.EInvalid, Field: "request_id", Message: "a request id of 1-128 characters without spaces is required"}
	}
	return nil
}
