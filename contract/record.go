package contract

import (
	"encoding/base64"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/shopspring/decimal"
)

// AppendRecord appends c as the wire's encoding of a Contract
// (protocol.Marshal, which writes what encoding/json does), without its
// reflection: a store writes the whole record at every change of state,
// and that encoding was a tenth of the exchange's CPU per contract on
// PostgreSQL (docs/benchmarks.md, issue 42). ok is false, and b is
// returned as it was, where it cannot promise the same bytes: terms
// without a client (no record has those), a time that encoding/json
// refuses (a year outside 0–9999, an offset of a day or more), or a
// string outside the terms that is not UTF-8 (protocol.Marshal writes
// its replacement character as it is, appendString as \ufffd); the
// caller encodes those with protocol.Marshal.
// TestAppendRecord and FuzzAppendRecord (package protocol) hold it to
// protocol.Marshal.
func (c *Contract) AppendRecord(b []byte) (out []byte, ok bool) {
	if c.Terms.Client == "" || !c.timesEncodable() || !c.stringsUTF8() {
		return b, false
	}
	b = append(b, `{"id":`...)
	b = appendString(b, c.ID)
	b = append(b, `,"client":`...)
	b = appendString(b, c.Client)
	b = append(b, `,"server":`...)
	b = appendString(b, c.Server)
	b = append(b, `,"terms":`...)
	b = c.Terms.appendJSON(b)
	b = append(b, `,"state":`...)
	b = appendString(b, string(c.State))
	b = AppendStringField(b, `,"reason":`, string(c.Reason))
	b = AppendStringField(b, `,"resumes":`, c.Resumes)
	b = AppendIntsField(b, `,"gpus":`, c.GPUs)
	b = AppendStringField(b, `,"meter":`, string(c.Meter))
	if c.Output != (OutputCaps{}) {
		b = append(b, `,"output":{`...)
		if c.Output.Log != 0 {
			b = append(b, `"log":`...)
			b = strconv.AppendInt(b, c.Output.Log, 10)
		}
		if c.Output.Results != 0 {
			if c.Output.Log != 0 {
				b = append(b, ',')
			}
			b = append(b, `"results":`...)
			b = strconv.AppendInt(b, c.Output.Results, 10)
		}
		b = append(b, '}')
	}
	b = AppendStringField(b, `,"image":`, c.Image)
	b = AppendStringField(b, `,"model":`, c.Model)
	b = AppendTimeField(b, `,"queued_at":`, c.QueuedAt, true)
	b = AppendTimeField(b, `,"accepted_at":`, c.AcceptedAt, false)
	b = AppendTimeField(b, `,"start_deadline":`, c.StartDeadline, false)
	b = AppendTimeField(b, `,"started_at":`, c.StartedAt, true)
	b = AppendTimeField(b, `,"settled_at":`, c.SettledAt, true)
	b = AppendTimeField(b, `,"last_seen":`, c.LastSeen, true)
	if c.Reading != nil {
		b = c.Reading.AppendJSON(append(b, `,"reading":`...))
	}
	b = AppendSignedField(b, `,"signed":`, c.Signed)
	b = AppendSignedField(b, `,"accept_signed":`, c.AcceptSigned)
	b = appendStrings(b, `,"cap_holds":`, c.CapHolds)
	b = appendStrings(b, `,"spend_holds":`, c.SpendHolds)
	b = AppendDecimalField(b, `,"charge":`, c.Charge)
	b = AppendDecimalField(b, `,"refund":`, c.Refund)
	if st := c.Stuck; st != nil {
		b = AppendTimeField(b, `,"stuck":{"since":`, st.Since, false)
		b = append(b, `,"attempts":`...)
		b = strconv.AppendInt(b, int64(st.Attempts), 10)
		b = AppendTimeField(b, `,"retry":`, st.Retry, false)
		b = append(b, `,"error":`...)
		b = appendString(b, st.Error)
		b = append(b, '}')
	}
	if st := c.Stop; st != nil {
		b = append(b, `,"stop":{"reason":`...)
		b = appendString(b, string(st.Reason))
		b = AppendTimeField(b, `,"at":`, st.At, false)
		b = AppendTimeField(b, `,"by":`, st.By, false)
		b = append(b, '}')
	}
	return append(b, '}'), true
}

// timesEncodable says whether encoding/json writes every time of c
// (time.Time.MarshalJSON refuses the others).
func (c *Contract) timesEncodable() bool {
	ts := []time.Time{c.QueuedAt, c.AcceptedAt, c.StartDeadline, c.StartedAt, c.SettledAt, c.LastSeen, c.Terms.StartAt}
	if c.Reading != nil {
		ts = append(ts, c.Reading.At)
	}
	if c.Stuck != nil {
		ts = append(ts, c.Stuck.Since, c.Stuck.Retry)
	}
	if c.Stop != nil {
		ts = append(ts, c.Stop.At, c.Stop.By)
	}
	for _, t := range ts {
		if !TimeEncodable(t) {
			return false
		}
	}
	return true
}

// stringsUTF8 says whether every string of c outside its terms is
// UTF-8.
func (c *Contract) stringsUTF8() bool {
	ss := []string{c.ID, c.Client, c.Server, string(c.State), string(c.Reason), c.Resumes, string(c.Meter), c.Image, c.Model}
	if r := c.Reading; r != nil {
		ss = append(ss, r.Contract, string(r.Reason))
	}
	if c.Signed != nil {
		ss = append(ss, c.Signed.Sig)
	}
	if c.AcceptSigned != nil {
		ss = append(ss, c.AcceptSigned.Sig)
	}
	ss = append(ss, c.CapHolds...)
	ss = append(ss, c.SpendHolds...)
	if c.Stuck != nil {
		ss = append(ss, c.Stuck.Error)
	}
	if c.Stop != nil {
		ss = append(ss, string(c.Stop.Reason))
	}
	for _, s := range ss {
		if !utf8.ValidString(s) {
			return false
		}
	}
	return true
}

// AppendStringField appends name and s, unless s is empty (omitempty).
func AppendStringField(b []byte, name, s string) []byte {
	if s == "" {
		return b
	}
	return appendString(append(b, name...), s)
}

// AppendTimeField appends name and t as time.Time.MarshalJSON writes it;
// with omitZero nothing where t is zero.
func AppendTimeField(b []byte, name string, t time.Time, omitZero bool) []byte {
	if omitZero && t.IsZero() {
		return b
	}
	b = append(b, name...)
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

// AppendDecimalField appends name and d as protocol.Marshal writes an
// amount: AppendDecimal's text, quoted.
func AppendDecimalField(b []byte, name string, d decimal.Decimal) []byte {
	b = append(b, name...)
	b = append(b, '"')
	b = AppendDecimal(b, d)
	return append(b, '"')
}

// AppendJSON appends r as encoding/json writes it (protocol.Marshal's
// amounts): for the encoders without reflection (AppendRecord,
// protocol's events).
func (r *Reading) AppendJSON(b []byte) []byte {
	b = append(b, `{"contract":`...)
	b = appendString(b, r.Contract)
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, r.Seq, 10)
	b = AppendDecimalField(b, `,"u":`, r.U)
	b = append(b, `,"t":"`...)
	b = append(b, time.Duration(r.T).String()...)
	b = append(b, '"')
	b = AppendDecimalField(b, `,"s":`, r.S)
	b = AppendDecimalField(b, `,"energy":`, r.EnergyJ)
	b = AppendTimeField(b, `,"at":`, r.At, false)
	if r.Final {
		b = append(b, `,"final":true`...)
	}
	b = AppendStringField(b, `,"reason":`, string(r.Reason))
	if r.ExitCode != nil {
		b = append(b, `,"exit_code":`...)
		b = strconv.AppendInt(b, int64(*r.ExitCode), 10)
	}
	return append(b, '}')
}

// AppendIntsField appends name and ns as a JSON array, unless ns is
// empty (omitempty): a contract's GPUs, in its record and its events.
func AppendIntsField(b []byte, name string, ns []int) []byte {
	return appendArrayField(b, name, ns, func(b []byte, n int) []byte { return strconv.AppendInt(b, int64(n), 10) })
}

// appendArrayField appends name and xs as a JSON array, each written by
// each, unless xs is empty (omitempty).
func appendArrayField[T any](b []byte, name string, xs []T, each func([]byte, T) []byte) []byte {
	if len(xs) == 0 {
		return b
	}
	b = append(b, name...)
	b = append(b, '[')
	for i, x := range xs {
		if i > 0 {
			b = append(b, ',')
		}
		b = each(b, x)
	}
	return append(b, ']')
}

// AppendJSONString appends s quoted as encoding/json writes it, for s
// UTF-8 (protocol.Marshal writes an invalid byte's replacement as it is,
// this as \ufffd).
func AppendJSONString(b []byte, s string) []byte { return appendString(b, s) }

// TimeEncodable says whether time.Time.MarshalJSON writes t: a year in
// 0–9999 and an offset of less than a day.
func TimeEncodable(t time.Time) bool {
	if y := t.Year(); y < 0 || y > 9999 {
		return false
	}
	_, off := t.Zone()
	return off > -24*3600 && off < 24*3600
}

// Encodable says whether r's strings are UTF-8 and its time one
// that encoding/json writes, where AppendJSON writes what
// protocol.Marshal does.
func (r *Reading) Encodable() bool {
	return TimeEncodable(r.At) && utf8.ValidString(r.Contract) && utf8.ValidString(string(r.Reason))
}

// AppendJSON appends s as encoding/json writes it: its body in base64
// (null where nil).
func (s *Signed) AppendJSON(b []byte) []byte {
	if s.Body == nil {
		b = append(b, `{"body":null`...)
	} else {
		b = append(b, `{"body":"`...)
		b = base64.StdEncoding.AppendEncode(b, s.Body)
		b = append(b, '"')
	}
	b = append(b, `,"sig":`...)
	b = appendString(b, s.Sig)
	return append(b, '}')
}

// AppendSignedField appends name and s (omitempty).
func AppendSignedField(b []byte, name string, s *Signed) []byte {
	if s == nil {
		return b
	}
	return s.AppendJSON(append(b, name...))
}

// appendStrings appends name and ss as an array, unless ss is empty
// (omitempty).
func appendStrings(b []byte, name string, ss []string) []byte {
	return appendArrayField(b, name, ss, appendString)
}
