package protocol_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// FuzzDecodeReading: whatever a server sends, DecodeReading either refuses
// it with a typed EInvalid error or returns a reading that every valid
// contract can price (so that storing it can never lock an escrow), that
// encodes and decodes back to itself.
func FuzzDecodeReading(f *testing.F) {
	f.Add([]byte(`{"contract":"c-1","seq":1,"u":"12.5","t":"10s","s":"1","energy":"300","at":"2026-11-21T12:00:00Z"}`))
	f.Add([]byte(`{"contract":"c-1","seq":2,"u":"1e65","t":"10s","s":"1","energy":"0","at":"2026-11-21T12:00:00Z","final":true,"reason":"completed","exit_code":0}`))
	f.Add([]byte(`{"contract":"c-1","seq":3,"u":"0.0000000000000000000000000000000000000000000000000000000000000000000001","t":"1s","s":"1e-70","energy":"-1","at":"2100-01-01T00:00:00Z"}`))
	f.Add([]byte(`{"contract":"c-1","seq":1,"u":1,"t":"8760h","s":"2","energy":"0","at":"2026-11-21T12:00:00Z","extra":true}`))
	f.Add([]byte(`[]`))
	terms := contract.Terms{Client: "c", Currency: "CRED", GPUs: 4, TimeLimit: time.Hour,
		Prepayment: decimal.RequireFromString("50"), P: contract.Flat(decimal.RequireFromString("0.003")),
		Q: contract.Flat(decimal.RequireFromString("0.001"))}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := protocol.DecodeReading(data)
		if err != nil {
			var e *bourse.Error
			if !errors.As(err, &e) || e.Code != bourse.EInvalid {
				t.Fatalf("error is not an EInvalid *bourse.Error: %#v", err)
			}
			return
		}
		if _, err := contract.Charge(terms, r.Usage(), 2); err != nil {
			t.Fatalf("reading %s decoded but does not price: %v", data, err)
		}
		out, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("encode: %v", err)
		}
		back, err := protocol.DecodeReading(out)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", out, err)
		}
		if !sameReading(r, back) {
			t.Fatalf("round trip changed the reading:\n%+v\n%+v", r, back)
		}
	})
}

func sameReading(a, b contract.Reading) bool {
	return a.Contract == b.Contract && a.Seq == b.Seq && a.U.Equal(b.U) && a.T == b.T && a.S.Equal(b.S) &&
		a.EnergyJ.Equal(b.EnergyJ) && a.At.Equal(b.At) && a.Final == b.Final && a.Reason == b.Reason &&
		reflect.DeepEqual(a.ExitCode, b.ExitCode)
}

// FuzzDecodeHello: a hello or heartbeat either is refused with a typed
// EInvalid error or describes a server the registry can hold.
func FuzzDecodeHello(f *testing.F) {
	f.Add([]byte(`{"currency":"CRED","gpus":[{"index":0,"model":"H100","memory_mib":81559}],"free":1,"running":["c-1"],"policy":"reserve","at":"2026-11-21T12:00:00Z"}`))
	f.Add([]byte(`{"currency":"CRED","gpus":[{"index":0,"model":"H100","memory_mib":1},{"index":0,"model":"A100","memory_mib":1}],"free":2}`))
	f.Add([]byte(`{"currency":"","gpus":[],"free":-1}`))
	f.Add([]byte(`{"currency":"CRED","gpus":[{"index":1,"model":"","memory_mib":-5}],"free":0,"running":["a b"]}`))
	f.Add([]byte(`{"currency":"CRED","gpus":[{"index":0,"model":"H100","memory_mib":1}],"free":1,"runs":{"runner":"process","meter":"nvml","programs":["/usr/bin/python3"]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := protocol.DecodeHello(data)
		if err != nil {
			var e *bourse.Error
			if !errors.As(err, &e) || e.Code != bourse.EInvalid {
				t.Fatalf("error is not an EInvalid *bourse.Error: %#v", err)
			}
			return
		}
		if len(h.GPUs) == 0 || len(h.GPUs) > protocol.MaxServerGPUs || h.Free < 0 || h.Free > len(h.GPUs) {
			t.Fatalf("accepted an impossible server: %d GPUs, %d free", len(h.GPUs), h.Free)
		}
		seen := map[int]bool{}
		for _, g := range h.GPUs {
			if g.Index < 0 || seen[g.Index] || g.Model == "" || g.MemoryMiB < 0 {
				t.Fatalf("accepted GPU %+v", g)
			}
			seen[g.Index] = true
		}
		for _, id := range h.Running {
			if protocol.CheckID(id) != nil {
				t.Fatalf("accepted running contract id %q", id)
			}
		}
		if h.Runs != nil && (h.Runs.Runner == "" || len(h.Runs.Programs) > protocol.MaxPrograms) {
			t.Fatalf("accepted runs %+v", h.Runs)
		}
	})
}
