package contract

import (
	"encoding/json"
	"slices"
	"strconv"
	"time"

	"github.com/shopspring/decimal"
)

// MarshalJSON writes the terms in the form ParseTerms reads, byte for byte
// what encoding/json writes of their wire form (termsJSON), without its
// reflection: every contract, event and message to a server carries terms.
// FuzzMarshalWire holds it to encoding/json.
func (t Terms) MarshalJSON() ([]byte, error) {
	return t.appendJSON(make([]byte, 0, 256)), nil
}

func (t Terms) appendJSON(b []byte) []byte {
	b = append(b, `{"client":`...)
	b = appendString(b, t.Client)
	b = append(b, `,"currency":`...)
	b = appendString(b, t.Currency)
	b = append(b, `,"gpus":`...)
	b = strconv.AppendInt(b, int64(t.GPUs), 10)
	if t.Class != (Class{}) {
		b = append(b, `,"class":{`...)
		sep := ""
		if t.Class.Model != "" {
			b = append(b, `"model":`...)
			b = appendString(b, t.Class.Model)
			sep = ","
		}
		if t.Class.MinMemoryMiB != 0 {
			b = append(b, sep+`"min_memory_mib":`...)
			b = strconv.AppendInt(b, int64(t.Class.MinMemoryMiB), 10)
		}
		b = append(b, '}')
	}
	b = append(b, `,"time_limit":`...)
	b = appendString(b, t.TimeLimit.String())
	b = append(b, `,"prepayment":`...)
	b = appendQuotedFixed(b, t.Prepayment)
	b = append(b, `,"p":`...)
	b = t.P.appendJSON(b)
	if len(t.Q) > 0 {
		b = append(b, `,"q":`...)
		b = t.Q.appendJSON(b)
	}
	if t.Preemptible {
		b = append(b, `,"preemptible":true`...)
	}
	if t.Server != "" {
		b = append(b, `,"server":`...)
		b = appendString(b, t.Server)
	}
	if t.Job != nil {
		b = append(b, `,"job":`...)
		b = t.Job.appendJSON(b)
	}
	if !t.StartAt.IsZero() {
		b = append(b, `,"start_at":`...)
		b = appendString(b, t.StartAt.UTC().Format(time.RFC3339Nano))
	}
	return append(b, '}')
}

func (j *JobSpec) appendJSON(b []byte) []byte {
	b = append(b, '{')
	sep := ""
	if j.Image != "" {
		b = append(b, `"image":`...)
		b = appendString(b, j.Image)
		sep = ","
	}
	if j.Command != "" {
		b = append(b, sep+`"command":`...)
		b = appendString(b, j.Command)
		sep = ","
	}
	if len(j.Args) > 0 {
		b = append(b, sep+`"args":[`...)
		for i, a := range j.Args {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, a)
		}
		b = append(b, ']')
		sep = ","
	}
	if len(j.Env) > 0 {
		b = append(b, sep+`"env":{`...)
		names := make([]string, 0, len(j.Env))
		for k := range j.Env {
			names = append(names, k)
		}
		slices.Sort(names) // encoding/json writes a map's keys in order
		for i, k := range names {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			b = appendString(b, j.Env[k])
		}
		b = append(b, '}')
		sep = ","
	}
	if f := j.Files; f != nil {
		b = append(b, sep+`"files":{"digest":`...)
		b = appendString(b, f.Digest)
		b = append(b, `,"bytes":`...)
		b = strconv.AppendInt(b, f.Bytes, 10)
		b = append(b, '}')
		sep = ","
	}
	if p := j.Profile; p != nil {
		b = append(b, sep+`"profile":{"utilization":`...)
		b = appendQuotedFixed(b, p.Utilization)
		b = append(b, `,"duration":`...)
		b = appendString(b, p.Duration.String())
		b = append(b, '}')
	}
	return append(b, '}')
}

// MarshalJSON writes the curve as an array of [x, y] decimal-string pairs:
// [["0","0"],["1","0.01"]]. The empty curve is [].
func (c Curve) MarshalJSON() ([]byte, error) {
	return c.appendJSON(nil), nil
}

func (c Curve) appendJSON(b []byte) []byte {
	b = append(b, '[')
	for i, p := range c {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = appendQuotedFixed(b, p.X)
		b = append(b, ',')
		b = appendQuotedFixed(b, p.Y)
		b = append(b, ']')
	}
	return append(b, ']')
}

// appendQuotedFixed writes d as a JSON string in appendFixed's form:
// a decimal's text never needs escaping.
func appendQuotedFixed(b []byte, d decimal.Decimal) []byte {
	b = append(b, '"')
	b = appendFixed(b, d)
	return append(b, '"')
}

// appendString writes s as encoding/json does: quoted, with <, > and &
// escaped for HTML and invalid UTF-8 replaced. Names, amounts and
// durations need no escape and are copied as they are.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
