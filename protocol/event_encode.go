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
		b = contract.AppendDecimalField(b, `,"due":`, e.Due)
	}
	b = contract.AppendStringField(b, `,"warning":`, e.Warning)
	b = contract.AppendStringField(b, `,"message":`, e.Message)
	b = contract.AppendTimeField(b, `,"at":`, e.At, false)
	return append(b, '}'), true
}

// appendJSON appends ch as Marshal writes it, for ch whose strings are
// UTF-8 and whose times encoding/json writes (Event.encodable).
func (ch *ContractChange) appendJSON(b []byte) []byte {
	b = append(b, `{"id":`...)
	b = contract.AppendJSONString(b, ch.ID)
	b = contract.AppendStringField(b, `,"client":`, ch.Client)
	b = contract.AppendStringField(b, `,"server":`, ch.Server)
	if !ch.Terms.IsZero() {
		terms, _ := ch.Terms.MarshalJSON() // never fails
		b = append(append(b, `,"terms":`...), terms...)
	}
	b = contract.AppendStringField(b, `,"state":`, string(ch.State))
	b = contract.AppendStringField(b, `,"reason":`, string(ch.Reason))
	b = contract.AppendStringField(b, `,"resumes":`, ch.Resumes)
	b = contract.AppendIntsField(b, `,"gpus":`, ch.GPUs)
	b = contract.AppendStringField(b, `,"meter":`, string(ch.Meter))
	b = contract.AppendStringField(b, `,"image":`, ch.Image)
	b = contract.AppendStringField(b, `,"model":`, ch.Model)
	b = contract.AppendTimeField(b, `,"queued_at":`, ch.QueuedAt, true)
	b = contract.AppendTimeField(b, `,"accepted_at":`, ch.AcceptedAt, true)
	b = contract.AppendTimeField(b, `,"start_deadline":`, ch.StartDeadline, true)
	b = contract.AppendTimeField(b, `,"started_at":`, ch.StartedAt, true)
	b = contract.AppendTimeField(b, `,"settled_at":`, ch.SettledAt, true)
	if ch.Reading != nil {
		b = ch.Reading.AppendJSON(append(b, `,"reading":`...))
	}
	b = contract.AppendSignedField(b, `,"signed":`, ch.Signed)
	b = contract.AppendSignedField(b, `,"accept_signed":`, ch.AcceptSigned)
	if ch.Charge != nil {
		b = contract.AppendDecimalField(b, `,"charge":`, *ch.Charge)
	}
	if ch.Refund != nil {
		b = contract.AppendDecimalField(b, `,"refund":`, *ch.Refund)
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
