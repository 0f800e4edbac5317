package protocol_test

import (
	"bytes"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/protocol"
)

// sameAsMarshal fails unless c.AppendRecord writes, byte for byte, what
// protocol.Marshal writes of c, after the bytes it was given.
func sameAsMarshal(t *testing.T, c contract.Contract) {
	t.Helper()
	want, err := protocol.Marshal(c)
	require.NoError(t, err)
	got, ok := c.AppendRecord([]byte("prefix"))
	require.True(t, ok, "%+v", c)
	if !bytes.Equal(got, append([]byte("prefix"), want...)) {
		t.Fatalf("AppendRecord wrote\n%s\nprotocol.Marshal\n%s", got[len("prefix"):], want)
	}
}

// recordWith is fullRecord with every string s, every count n, the
// signed bodies body, and its times at nanosecond ns in zone off: the
// ways a record's encoding could differ.
func recordWith(s string, n int64, body []byte, ns int64, off int) contract.Contract {
	c := fullRecord(contract.StateRunning)
	zone := time.FixedZone("z", off)
	at := func(t time.Time) time.Time { return t.Add(time.Duration(ns)).In(zone) }
	c.ID, c.Client, c.Server, c.Resumes, c.Image, c.Model = s, "<"+s, s+"&", s, "img"+s, s
	c.Terms.Client, c.Terms.Server = "<"+s, s
	c.Terms.Class = contract.Class{Model: s, MinMemoryMiB: int(n)}
	c.Terms.Job = &contract.JobSpec{Image: "img/" + s, Command: s, Args: []string{s, ""}, Env: map[string]string{s: s, "b": "<"},
		Files:   &contract.Files{Digest: "sha256:" + s, Bytes: n},
		Profile: &contract.Profile{Utilization: dectest.D("0.25"), Duration: time.Duration(ns)}}
	c.Terms.Q = contract.Flat(dectest.D("0.002"))
	c.Terms.Preemptible = true
	c.Terms.StartAt = at(c.AcceptedAt)
	c.State, c.Reason, c.Meter = contract.State(s), contract.Reason(s), contract.Meter(s)
	c.GPUs = []int{int(n), -1, 0}
	c.Output = contract.OutputCaps{Log: n, Results: -n}
	c.QueuedAt, c.AcceptedAt, c.StartDeadline = at(c.QueuedAt), at(c.AcceptedAt), at(c.StartDeadline)
	c.StartedAt, c.SettledAt, c.LastSeen = at(c.StartedAt), at(c.SettledAt), at(c.LastSeen)
	r := *c.Reading
	code := int(n)
	r.Contract, r.Seq, r.T, r.At, r.Reason, r.ExitCode = s, uint64(n), contract.Duration(ns), at(r.At), contract.Reason(s), &code
	c.Reading = &r
	c.Signed = &contract.Signed{Body: body, Sig: s}
	c.AcceptSigned = &contract.Signed{Body: append(body, '\n'), Sig: "<" + s}
	c.CapHolds, c.SpendHolds = []string{s, ""}, []string{"&" + s}
	c.Charge, c.Refund = dectest.D("-0.000001"), dectest.D("123456789012345678901234567890.5")
	c.Stuck = &contract.Stuck{Since: at(c.Stuck.Since), Attempts: int(n), Retry: at(c.Stuck.Retry), Error: s}
	c.Stop = &contract.Stop{Reason: contract.Reason(s), At: at(c.Stop.At), By: at(c.Stop.By)}
	return c
}

// TestAppendRecord: a store's record encoding is protocol.Marshal's,
// byte for byte, for every state and every optional part present or
// not; where it cannot promise that it says so.
func TestAppendRecord(t *testing.T) {
	for _, st := range []contract.State{contract.StateAccepted, contract.StateRunning, contract.StateSettled} {
		c := fullRecord(st)
		sameAsMarshal(t, c)
		// A contract as Open makes it: no optional part.
		bare := contract.Contract{ID: "c-2", Client: "bob", Server: "gpu2", Terms: c.Terms, State: st,
			AcceptedAt: c.AcceptedAt, StartDeadline: c.StartDeadline}
		sameAsMarshal(t, bare)
		bare.Output = contract.OutputCaps{Results: 7}
		bare.Signed = &contract.Signed{Sig: "s"}             // a nil body: null
		bare.AcceptSigned = &contract.Signed{Body: []byte{}} // an empty one: ""
		bare.Reading = &contract.Reading{}
		bare.Stuck, bare.Stop = &contract.Stuck{}, &contract.Stop{}
		sameAsMarshal(t, bare)
	}
	sameAsMarshal(t, recordWith("a<b>&\"\\\u2028\x01é", -3, []byte("\x00\xff"), 1, -3600))
	sameAsMarshal(t, recordWith("", 1<<40, nil, 999_999_999, 5*3600+1800))

	for name, c := range map[string]contract.Contract{
		"no terms":     {ID: "c-3", AcceptedAt: time.Now()},
		"year 10000":   recordWith("x", 1, nil, 0, 0),
		"offset 24h":   recordWith("x", 1, nil, 0, 24*3600),
		"reading at 0": recordWith("x", 1, nil, 0, 0),
		"not UTF-8":    recordWith("\xff", 1, nil, 0, 0),
	} {
		switch name {
		case "year 10000":
			c.SettledAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
		case "reading at 0":
			c.Reading.At = time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)
		}
		got, ok := c.AppendRecord([]byte("kept"))
		assert.False(t, ok, name)
		assert.Equal(t, "kept", string(got), name)
		_, err := protocol.Marshal(c)
		if name != "no terms" && name != "not UTF-8" {
			assert.Error(t, err, "%s: encoding/json refuses it too", name)
		}
	}
}

// FuzzAppendRecord: AppendRecord writes what protocol.Marshal writes,
// whatever the strings, counts, signed bodies and times of a record.
func FuzzAppendRecord(f *testing.F) {
	f.Add("a<b>&\"\\\u2028\x01\xff", int64(-3), []byte("\x00"), int64(1), -3600)
	f.Add("", int64(0), []byte(nil), int64(0), 0)
	f.Add("é", int64(1<<62), []byte("offer\naccept"), int64(-999_999_999), 14*3600)
	f.Fuzz(func(t *testing.T, s string, n int64, body []byte, ns int64, off int) {
		c := recordWith(s, n, body, ns, off%(30*3600))
		if _, ok := c.AppendRecord(nil); !ok {
			if _, err := protocol.Marshal(c); err == nil && utf8.ValidString(s) {
				t.Fatalf("AppendRecord declined a record protocol.Marshal writes: %+v", c)
			}
			return
		}
		sameAsMarshal(t, c)
	})
}
