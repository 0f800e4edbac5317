package protocol

import (
	"time"
	"unicode/utf8"

	"github.com/bourse/bourse/contract"
)

// MarshalEvent encodes e as Marshal does, byte for byte, without its
// reflection where it can (an event of a contract: every event of a
// contract's life): the exchange sends a client three or more a
// contract, and encoding them was 5–9% of its CPU (docs/benchmarks.md,
// issue 42). The events of waiting offers, and events whose strings are
// not UTF-8 or whose times encoding/json refuses, go through Marshal.
// TestMarshalEvent and FuzzMarshalEvent hold it to Marshal.
func MarshalEvent(e Event) ([]byte, error) {
	if b, ok := e.appendJSON(make([]byte, 0, 512)); ok {
		return b, nil
	}
	return Marshal(e)
}

// appendJSON appends e as Marshal writes it; ok is false, and b as it
// was, where it cannot promise that.
func (e *Event) appendJSON(b []byte) (out []byte, ok bool) {
	if e.Waiting != nil || len(e.Counters) > 0 || !e.encodable() {
		return b, false
	}
	b = append(b, `{"type":`...)
	b = contract.AppendJSONString(b, string(e.Type))
	if ch := e.Contract; ch != nil {
		b = ch.appendJSON(append(b, `,"contract":`...))
	}
	if !e.Due.IsZero() {
		b = contract.AppendJSONDecimal(append(b, `,"due":`...), e.Due)
	}
	b = appendStringField(b, `,"warning":`, e.Warning)
	b = appendStringField(b, `,"message":`, e.Message)
	b = contract.AppendJSONTime(append(b, `,"at":`...), e.At)
	return append(b, '}'), true
}

// appendJSON appends ch as Marshal writes it, for ch whose strings are
// UTF-8 and whose times encoding/json writes (Event.encodable).
func (ch *ContractChange) appendJSON(b []byte) []byte {
	b = append(b, `{"id":`...)
	b = contract.AppendJSONString(b, ch.ID)
	b = appendStringField(b, `,"client":`, ch.Client)
	b = appendStringField(b, `,"server":`, ch.Server)
	if !ch.Terms.IsZero() {
		terms, _ := ch.Terms.MarshalJSON() // never fails
		b = append(append(b, `,"terms":`...), terms...)
	}
	b = appendStringField(b, `,"state":`, string(ch.State))
	b = appendStringField(b, `,"reason":`, string(ch.Reason))
	b = appendStringField(b, `,"resumes":`, ch.Resumes)
	b = contract.AppendIntsField(b, `,"gpus":`, ch.GPUs)
	b = appendStringField(b, `,"meter":`, string(ch.Meter))
	b = appendStringField(b, `,"image":`, ch.Image)
	b = appendStringField(b, `,"model":`, ch.Model)
	for _, t := range [...]struct {
		name string
		t    time.Time
	}{{`,"queued_at":`, ch.QueuedAt}, {`,"accepted_at":`, ch.AcceptedAt}, {`,"start_deadline":`, ch.StartDeadline},
		{`,"started_at":`, ch.StartedAt}, {`,"settled_at":`, ch.SettledAt}} {
		if !t.t.IsZero() {
			b = contract.AppendJSONTime(append(b, t.name...), t.t)
		}
	}
	if ch.Reading != nil {
		b = ch.Reading.AppendJSON(append(b, `,"reading":`...))
	}
	if ch.Signed != nil {
		b = ch.Signed.AppendJSON(append(b, `,"signed":`...))
	}
	if ch.AcceptSigned != nil {
		b = ch.AcceptSigned.AppendJSON(append(b, `,"accept_signed":`...))
	}
	if ch.Charge != nil {
		b = contract.AppendJSONDecimal(append(b, `,"charge":`...), *ch.Charge)
	}
	if ch.Refund != nil {
		b = contract.AppendJSONDecimal(append(b, `,"refund":`...), *ch.Refund)
	}
	return append(b, '}')
}

// encodable says whether every string of e is UTF-8 and every time one
// that encoding/json writes.
func (e *Event) encodable() bool {
	ss := []string{string(e.Type), e.Warning, e.Message}
	ts := []time.Time{e.At}
	if ch := e.Contract; ch != nil {
		ss = append(ss, ch.ID, ch.Client, ch.Server, string(ch.State), string(ch.Reason), ch.Resumes, string(ch.Meter), ch.Image, ch.Model)
		ts = append(ts, ch.QueuedAt, ch.AcceptedAt, ch.StartDeadline, ch.StartedAt, ch.SettledAt)
		for _, s := range []*contract.Signed{ch.Signed, ch.AcceptSigned} {
			if s != nil {
				ss = append(ss, s.Sig)
			}
		}
		if ch.Reading != nil && !ch.Reading.Encodable() {
			return false
		}
	}
	for _, t := range ts {
		if !contract.TimeEncodable(t) {
			return false
		}
	}
	for _, s := range ss {
		if !utf8.ValidString(s) {
			return false
		}
	}
	return true
}

// appendStringField appends name and s, unless s is empty (omitempty).
func appendStringField(b []byte, name, s string) []byte {
	if s == "" {
		return b
	}
	return contract.AppendJSONString(append(b, name...), s)
}
