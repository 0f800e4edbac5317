package contract

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

// decodeWireOracle is how parseTerms read the wire form before decodeWire:
// encoding/json, which FuzzDecodeWire holds decodeWire to.
func decodeWireOracle(data []byte) (termsJSON, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var w termsJSON
	err := dec.Decode(&w)
	return w, err
}

// FuzzDecodeWire: for every input checkStrict passes, decodeWire reads the
// values encoding/json reads, and refuses what it refuses with the same
// message and field.
func FuzzDecodeWire(f *testing.F) {
	for _, s := range []string{
		fullJSON, fullCanonical, offerWith("", ""), `{}`,
		offerWith("q", `[["0","0"],["1.5","2.25"]]`),
		offerWith("job", `{"env":{"A":"1","B":"\u00e9"},"args":[],"profile":{"utilization":"0.5","duration":"1h2m3.5s"}}`),
		offerWith("job", `{"env":{},"args":["a","\n"],"profile":{}}`),
		offerWith("job", `{"image":"ghcr.io/acme/train:v1","args":["--epochs","3"]}`), `{"job":{"image":5}}`,
		offerWith("job", `{"image":"busybox","files":{"digest":"sha256:00","bytes":1024}}`), `{"job":{"files":{"bytes":"1"}}}`,
		`{"job":{"files":{"bytes":1.5}}}`, `{"job":{"files":{"bytes":99999999999999999999}}}`, `{"job":{"files":[]}}`,
		`{"class":{},"job":{}}`, `{"class":{"model":"H100","min_memory_mib":80000}}`,
		`{"gpus":"2"}`, `{"gpus":1.5}`, `{"gpus":1e2}`, `{"gpus":-0}`, `{"gpus":99999999999999999999}`,
		`{"gpus":true}`, `{"preemptible":"yes"}`, `{"preemptible":1}`, `{"client":5}`, `{"client":{}}`,
		`{"prepayment":12.5}`, `{"time_limit":[]}`, `{"class":"x"}`, `{"class":[1]}`, `{"class":{"model":1}}`,
		`{"p":"x"}`, `{"p":["a"]}`, `{"p":[[1,"2"]]}`, `{"p":[[[1]]]}`, `{"p":[],"q":[[]]}`,
		`{"job":{"env":{"A":1}}}`, `{"job":{"env":[]}}`, `{"job":{"args":"a"}}`, `{"job":{"args":[1]}}`,
		`{"job":{"profile":"x"}}`, `{"job":{"profile":{"duration":5}}}`, `{"job":3}`,
		`{"gpus":"x","client":5}`, `{"client":5,"gpus":"x"}`, `{"\u0063lient":"a\ud800b"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > MaxTermsSize || checkStrict("op", data) != nil {
			return
		}
		got, gerr := decodeWire(data)
		want, werr := decodeWireOracle(data)
		if (gerr == nil) != (werr == nil) {
			t.Fatalf("%q: decodeWire says %v, encoding/json %v", data, gerr, werr)
		}
		if werr != nil {
			g, w := decodeError("op", gerr), decodeError("op", werr)
			if g.Error() != w.Error() {
				t.Fatalf("%q: decodeWire says %v, encoding/json %v", data, g, w)
			}
			return
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: decodeWire read\n%+v\nencoding/json\n%+v", data, got, want)
		}
	})
}

// marshalOracle is how MarshalJSON wrote terms before appendJSON:
// encoding/json of their wire form, which FuzzMarshalWire holds
// appendJSON to.
func marshalOracle(t Terms) ([]byte, error) {
	pairs := func(c Curve) [][]string {
		out := make([][]string, 0, len(c)) // never nil: an empty curve is [], not null
		for _, p := range c {
			out = append(out, []string{formatDecimal(p.X), formatDecimal(p.Y)})
		}
		return out
	}
	w := termsJSON{
		Client:      t.Client,
		Currency:    t.Currency,
		GPUs:        t.GPUs,
		TimeLimit:   ptr(t.TimeLimit.String()),
		Prepayment:  ptr(formatDecimal(t.Prepayment)),
		P:           pairs(t.P),
		Q:           pairs(t.Q),
		Preemptible: t.Preemptible,
		Server:      t.Server,
	}
	if t.Class != (Class{}) {
		w.Class = &classJSON{Model: t.Class.Model, MinMemoryMiB: t.Class.MinMemoryMiB}
	}
	if !t.StartAt.IsZero() {
		w.StartAt = ptr(t.StartAt.UTC().Format(time.RFC3339Nano))
	}
	if j := t.Job; j != nil {
		w.Job = &jobJSON{Image: j.Image, Command: j.Command, Args: j.Args, Env: j.Env}
		if f := j.Files; f != nil {
			w.Job.Files = &filesJSON{Digest: f.Digest, Bytes: f.Bytes}
		}
		if p := j.Profile; p != nil {
			w.Job.Profile = &profileJSON{Utilization: ptr(formatDecimal(p.Utilization)), Duration: ptr(p.Duration.String())}
		}
	}
	return json.Marshal(w)
}

// FuzzMarshalWire: MarshalJSON writes, byte for byte, what encoding/json
// writes of any terms ParseTerms reads, and of those terms changed in the
// ways parsing cannot make (strings that need escaping, negative counts,
// empty curves).
func FuzzMarshalWire(f *testing.F) {
	f.Add([]byte(fullJSON), "a<b>&\"\\\u2028\x01\xff", -3)
	f.Add([]byte(`{"job":{"env":{"b":"1","a":"2","":"<"},"args":["x"]},"class":{"min_memory_mib":5}}`), "", 0)
	f.Add([]byte(`{"job":{"profile":{}},"p":[],"q":[]}`), "é", 1)
	f.Add([]byte(`{"job":{"image":"busybox@sha256:0123"}}`), "", 2)
	f.Add([]byte(`{"job":{"command":"x","files":{"digest":"sha256:ab","bytes":-7}}}`), "", 3)
	f.Fuzz(func(t *testing.T, data []byte, s string, n int) {
		terms, err := ParseTerms(data)
		if err != nil {
			return
		}
		for _, v := range []Terms{terms, changed(terms, s, n)} {
			got, err := v.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			want, err := marshalOracle(v)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("MarshalJSON wrote\n%s\nencoding/json\n%s", got, want)
			}
		}
	})
}

// changed puts s in every string of t and n in every count.
func changed(t Terms, s string, n int) Terms {
	t.Client, t.Currency, t.Server = s, s+"x", "<"+s
	t.GPUs, t.Class = n, Class{Model: s, MinMemoryMiB: -n}
	t.Job = &JobSpec{Image: "<" + s, Command: s, Args: []string{s, ""}, Env: map[string]string{s: s, "z" + s: ""},
		Files: &Files{Digest: s, Bytes: int64(n)}}
	t.Q = nil
	return t
}

// formatDecimal is the terms' decimal form as decimal's own methods write
// it, keeping the places it was written with ("12.50" stays "12.50"): the
// oracle for appendFixed, which writes it without math/big.
func formatDecimal(d decimal.Decimal) string {
	if e := d.Exponent(); e < 0 {
		return d.StringFixed(-e)
	}
	return d.String()
}
