package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/bourse/bourse"
)

// Unmarshal reads one JSON message strictly: at most MaxMessage bytes, no
// field the message type lacks, nothing after the value. Its errors are
// EInvalid *bourse.Errors, or the typed error of a field's own decoder
// (contract.Terms names its fields).
func Unmarshal(data []byte, v any) error {
	if len(data) > MaxMessage {
		return &bourse.Error{Code: bourse.EInvalid, Message: fmt.Sprintf("message of %d bytes exceeds the limit of %d", len(data), MaxMessage)}
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

// badJSON keeps a decoder's typed error or wraps a plain one.
func badJSON(err error) error {
	if bourse.ErrorCode(err) != bourse.EInternal {
		return err
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	return &bourse.Error{Code: bourse.EInvalid, Message: "malformed message: " + msg}
}

// UnderTerms names a field of an offer's terms by its path in the request
// ("terms.gpus"), where the terms' own checks name it from the terms' root
// ("gpus").
func UnderTerms(err error) error {
	var e *bourse.Error
	if errors.As(err, &e) && e.Field != "" && !strings.HasPrefix(e.Field, "terms.") {
		c := *e
		c.Field = "terms." + e.Field
		return &c
	}
	return err
}
