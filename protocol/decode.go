package protocol

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	json "github.com/go-json-experiment/json/v1"

	"github.com/bourse/bourse"
)

// Unmarshal reads one JSON message strictly, as encoding/json would with
// DisallowUnknownFields: at most MaxMessage bytes, no
// field the message type lacks, nothing after the value. Its errors are
// EInvalid *bourse.Errors, or the typed error of a field's own decoder
// (contract.Terms names its fields).
func Unmarshal(data []byte, v any) error {
	if len(data) > MaxMessage {
		return &bourse.Error{Code: bourse.EInvalid, Message: fmt.Sprintf("message of %d bytes exceeds the limit of %d", len(data), MaxMessage)}
	}
	if err := jsonv2.Unmarshal(data, v, json.DefaultOptionsV1(), jsonv2.RejectUnknownMembers(true)); err != nil {
		return badJSON(err)
	}
	return nil
}

// badJSON keeps a decoder's typed error, words a value of the wrong type
// as the terms' own checks do (field request_id, "want a string, got
// number"), and wraps any other error as a malformed message.
func badJSON(err error) error {
	if bourse.ErrorCode(err) != bourse.EInternal {
		return err
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		field := fieldPath(te.Field)
		return &bourse.Error{Code: bourse.EInvalid, Field: field,
			Message: fmt.Sprintf("want %s, got %s", wantOf(te.Type), gotOf(te.Value))}
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	return &bourse.Error{Code: bourse.EInvalid, Message: "malformed message: " + msg}
}

// fieldPath writes the decoder's path to a field ("gpus.1") as the
// terms' checks write theirs ("gpus[1]").
func fieldPath(p string) string {
	var b strings.Builder
	for i, step := range strings.Split(p, ".") {
		if _, err := strconv.Atoi(step); err == nil {
			b.WriteString("[" + step + "]")
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(step)
	}
	return b.String()
}

// wantOf names what a Go type takes in JSON.
func wantOf(t reflect.Type) string {
	if t == nil {
		return "another value"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "a " + t.String()
}

// gotOf names the kind of JSON value a type error found, from the
// decoder's description of it ("number", or "number -5").
func gotOf(v string) string {
	if strings.HasPrefix(v, "number") {
		return "number"
	}
	if v == "" {
		return "another value"
	}
	return v
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
