package protocol

import (
	"encoding/json"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/bourse/bourse"
)

// ErrorReply is the body of every error reply. The same code travels in the
// Nats-Service-Error-Code header and the message in Nats-Service-Error, the
// convention of nats.go's micro framework, so that generic tools see them.
type ErrorReply struct {
	Error *bourse.Error `json:"error"`
}

// EncodeError turns err into the headers and body of an error reply. Errors
// without a code are internal: their text stays in the exchange's log.
func EncodeError(err error) (code, message string, body []byte) {
	e := &bourse.Error{Code: bourse.ErrorCode(err), Message: bourse.ErrorMessage(err)}
	var be *bourse.Error
	if asError(err, &be) {
		e.Field, e.Op = be.Field, be.Op
	}
	if e.Code == bourse.EInternal {
		e.Message, e.Op = "internal error", ""
	}
	body, _ = json.Marshal(ErrorReply{Error: e})
	return string(e.Code), e.Message, body
}

// RespondError answers a micro request with err.
func RespondError(r micro.Request, err error) error {
	code, msg, body := EncodeError(err)
	return r.Error(code, msg, body)
}

// DecodeError returns the *bourse.Error of an error reply, or nil if msg is
// not one.
func DecodeError(msg *nats.Msg) error {
	code := msg.Header.Get(micro.ErrorCodeHeader)
	if code == "" {
		return nil
	}
	var r ErrorReply
	if json.Unmarshal(msg.Data, &r) == nil && r.Error != nil && r.Error.Code != "" {
		return r.Error
	}
	return &bourse.Error{Code: bourse.Code(code), Message: msg.Header.Get(micro.ErrorHeader)}
}

func asError(err error, target **bourse.Error) bool {
	for err != nil {
		if e, ok := err.(*bourse.Error); ok {
			*target = e
			return true
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		err = u.Unwrap()
	}
	return false
}
