package protocol_test

import (
	"bytes"
	stdjson "encoding/json"
	"errors"
	"testing"

	json "github.com/go-json-experiment/json/v1"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// The wire is read with github.com/go-json-experiment/json (what
// encoding/json becomes, its v1 semantics kept by json/v1's options),
// which decodes our messages 1.6-1.7 times as fast. These tests hold it to
// encoding/json's semantics: encoding/json is the oracle for which
// messages are accepted and what they decode to.

// strictStd is protocol.Unmarshal written on encoding/json. (The
// exchange's own used Decoder.More for "nothing after the value", which
// missed a stray "}" or "]" after it.)
func strictStd(data []byte, v any) error {
	dec := stdjson.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if len(bytes.Trim(data[dec.InputOffset():], " \t\r\n")) != 0 { // JSON's whitespace only
		return errors.New("data after the JSON value")
	}
	return nil
}

// wireTypes are the messages of an offer's life, each a fresh value.
var wireTypes = map[string]func() any{
	"offer_request": func() any { return new(protocol.OfferRequest) },
	"offer_reply":   func() any { return new(protocol.OfferReply) },
	"server_offer":  func() any { return new(protocol.ServerOffer) },
	"decision":      func() any { return new(protocol.Decision) },
	"start":         func() any { return new(protocol.Start) },
	"started":       func() any { return new(protocol.Started) },
	"cancel":        func() any { return new(protocol.Cancel) },
	"control":       func() any { return new(protocol.Control) },
	"event":         func() any { return new(protocol.Event) },
	"contract":      func() any { return new(protocol.ContractView) },
	"change":        func() any { return new(protocol.ContractChange) },
	"contracts":     func() any { return new(protocol.ContractsReply) },
	"reading":       func() any { return new(contract.Reading) },
	"hello_reply":   func() any { return new(protocol.HelloReply) },
	"error":         func() any { return new(protocol.ErrorReply) },
}

func FuzzUnmarshalOracle(f *testing.F) {
	seeds := []string{
		`{"request_id":"r-1","terms":{"client":"c","currency":"CRED","gpus":1,"time_limit":"1m0s","prepayment":"0.60","p":[["0","0.01"]],"job":{"profile":{"utilization":"1","duration":"1ms"}}}}`,
		`{"offer":"o-1","contract":{"id":"c-1","client":"c","server":"s","terms":{"client":"c","currency":"CRED","gpus":1,"time_limit":"1m0s","prepayment":"0.60","p":[["0","0.01"]],"server":"s"},"state":"accepted","accepted_at":"2026-11-25T04:34:50.532724356Z","start_deadline":"2026-11-25T04:35:05.532724356Z","charge":"0","refund":"0"}}`,
		`{"accept":true,"claim_for":"15s"}`,
		`{"accept":true,"hold_for":"15s"}`,
		`{"accept":false,"counters":[{"id":"k-1","server":"s","terms":{"client":"c","currency":"CRED","gpus":2,"time_limit":"1h0m0s","prepayment":"5","p":[["0","0.02"]]}}],"reason":"busy","code":"capacity_gone"}`,
		`{"contract":"c-1","gpus":[0,1],"at":"2026-11-25T04:35:00.555897846Z","booked":true}`,
		`{"contract":"c-1","seq":1,"u":"0.001","t":"1ms","s":"1","energy":"0.3","at":"2026-11-25T04:35:00.555897846Z","final":true,"reason":"completed","exit_code":0}`,
		`{"type":"started","contract":{"id":"c-1","client":"c","server":"s","state":"running","gpus":[0],"charge":"0","refund":"0"},"due":"0.5","at":"2026-11-25T04:35:00Z"}`,
		`{"contract":{"id":"c-1"},"counters":[],"rejections":[{"server":"s","reason":"no"}]}`,
		`{"id":"c-1","client":"c","server":"s","terms":{"client":"c","currency":"CRED","gpus":1,"time_limit":"1m0s","prepayment":"0.60","p":[["0","0.01"]]},"state":"settled","reason":"completed","gpus":[0],"meter":"nvml","accepted_at":"2026-11-25T04:34:50Z","start_deadline":"2026-11-25T04:35:05Z","started_at":"2026-11-25T04:34:51Z","settled_at":"2026-11-25T04:35:51Z","reading":{"contract":"c-1","seq":2,"u":"1","t":"1s","s":"1","energy":"0","at":"2026-11-25T04:35:50Z","final":true},"signed":{"body":"e30=","sig":"x"},"charge":"0.01","refund":"0.59","settlement_delayed_since":"2026-11-25T04:35:51Z"}`,
		`{"type":"settled","contract":{"id":"c-1","state":"settled","reason":"killed","settled_at":"2026-11-25T04:35:51Z","charge":"0.01","refund":"0.59"},"at":"2026-11-25T04:35:51Z"}`,
		`{"id":"c-1","charge":null,"refund":"1e2","gpus":null,"terms":null,"cap_holds":["x"]}`,
		`{"contracts":[{"id":"c-1","state":"running","last_seen":"2026-11-25T04:35:51Z"}]}`,
		`{"heartbeat":"1s","reading_every":"1s","server_lost_after":"10s"}`,
		`{"error":{"code":"invalid","field":"terms.gpus","message":"gpus: want an integer, got string"}}`,
		`{"offer":"o-1","Offer":"o-2","offer":"o-3"}`,
		`{"contract":"c-1","gpus":[1e3,-0,1.5]}`,
		`{"request_id":"\ud800\u00e9\"x","terms":null} `,
		`{"offer":"é` + "\xff" + `"}`,
		`[] `, `null`, `{"accept":"true"}`, `{"seq":18446744073709551616}`, `{"contract":"c"} {}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for name, fresh := range wireTypes {
			got, want := fresh(), fresh()
			err := protocol.Unmarshal(data, got)
			oracleErr := strictStd(data, want)
			if (err == nil) != (oracleErr == nil) {
				t.Fatalf("%s: %q: strict decode err %v, encoding/json's %v", name, data, err, oracleErr)
			}
			if err != nil {
				var e *bourse.Error
				if !errors.As(err, &e) || e.Code != bourse.EInvalid {
					t.Fatalf("%s: %q: error is not an EInvalid *bourse.Error: %#v", name, data, err)
				}
				continue
			}
			sameValue(t, name, data, got, want)
			enc, err := protocol.Marshal(got)
			if err != nil {
				t.Fatalf("%s: %q: Marshal: %v", name, data, err)
			}
			if oracle, _ := stdjson.Marshal(got); !bytes.Equal(enc, oracle) {
				t.Fatalf("%s: %q: Marshal writes\n%s\nencoding/json\n%s", name, data, enc, oracle)
			}

			// The lenient decode the agent, the exchange and the bidder use on
			// replies.
			got, want = fresh(), fresh()
			if err, oracleErr := json.Unmarshal(data, got), stdjson.Unmarshal(data, want); (err == nil) != (oracleErr == nil) {
				t.Fatalf("%s: %q: lenient decode err %v, encoding/json's %v", name, data, err, oracleErr)
			} else if err == nil {
				sameValue(t, name, data, got, want)
			}
		}
	})
}

// sameValue compares two decoded values by encoding/json's encoding of
// each: decimals and times compare by what they say.
func sameValue(t *testing.T, name string, data []byte, got, want any) {
	t.Helper()
	g, err := stdjson.Marshal(got)
	if err != nil {
		t.Fatalf("%s: %q: encode: %v", name, data, err)
	}
	w, err := stdjson.Marshal(want)
	if err != nil {
		t.Fatalf("%s: %q: encode oracle: %v", name, data, err)
	}
	if !bytes.Equal(g, w) {
		t.Fatalf("%s: %q decodes to\n%s\nencoding/json's\n%s", name, data, g, w)
	}
}

// A value of the wrong type is named by its field, as the terms' own
// checks name theirs, instead of the decoder's words and Go's type names.
func TestUnmarshalTypeErrors(t *testing.T) {
	for _, c := range []struct{ in, field, msg string }{
		{`{"request_id":1}`, "request_id", "want a string, got number"},
		{`{"request_id":"r","counter":{"a":1}}`, "counter", "want a string, got object"},
		{`{"request_id":true}`, "request_id", "want a string, got bool"},
		{`{"request_id":["r"]}`, "request_id", "want a string, got array"},
	} {
		var r protocol.OfferRequest
		err := protocol.Unmarshal([]byte(c.in), &r)
		var e *bourse.Error
		if !errors.As(err, &e) {
			t.Fatalf("%s: %#v is not a *bourse.Error", c.in, err)
		}
		if e.Code != bourse.EInvalid || e.Field != c.field || e.Message != c.msg {
			t.Errorf("%s: got %s %q %q, want invalid %q %q", c.in, e.Code, e.Field, e.Message, c.field, c.msg)
		}
	}
	for _, c := range []struct {
		in    string
		v     any
		field string
	}{
		{`{"contract":"c-1","gpus":[0,"1"]}`, new(protocol.Started), "gpus[1]"},
		{`{"offer":"o","contract":{"id":"c-1","gpus":[0,{}]}}`, new(protocol.Start), "contract.gpus[1]"},
		{`{"offer":"o","contract":{"id":"c-1","state":5}}`, new(protocol.Start), "contract.state"},
	} {
		err := protocol.Unmarshal([]byte(c.in), c.v)
		var e *bourse.Error
		if !errors.As(err, &e) || e.Code != bourse.EInvalid || e.Field != c.field {
			t.Errorf("%s: got %#v, want an invalid %s", c.in, err, c.field)
		}
	}
}
