package main

import (
	"strings"
	"testing"
	"testing/quick"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/bidder"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// TestSafe: control characters, Unicode format characters and bytes that
// are not UTF-8 are escaped; everything else is kept.
func TestSafe(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"H100", "H100"},
		{"NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"},
		{"café ünïcödé 日本", "café ünïcödé 日本"},
		{"\x1b[2J\x1b[31mH100", `\x1b[2J\x1b[31mH100`},
		{"a\rb\nc\td", `a\x0db\x0ac\x09d`},
		{"\x7f\u0085\u009b", `\x7f\u0085\u009b`},
		{"evil\u202etxt.exe", `evil\u202etxt.exe`},
		{"zero\u200bwidth\ufeff", `zero\u200bwidth\ufeff`},
		{"line\u2028sep", `line\u2028sep`},
		{"bad\xffutf8\xc3", `bad\xffutf8\xc3`},
		{`back\slash`, `back\slash`},
	} {
		assert.Equal(t, tc.want, safe(tc.in), "%q", tc.in)
	}
	// Whatever goes in, nothing a terminal acts on comes out.
	f := func(b []byte) bool {
		out := safe(string(b))
		for _, r := range out {
			if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
				return false
			}
		}
		return utf8.ValidString(out)
	}
	assert.NoError(t, quick.Check(f, nil))
}

// evil is what a party may choose to print on a client's terminal: clear
// the screen, set the window's title, a fake line, hidden text reversed.
const evil = "\x1b[2J\x1b]0;pwned\x07H100\r\nbourse: all good\t\u202eevil"

// TestPartyStringsPrintedSafely: a GPU model, a server's id, reason,
// note, meter and stop reason, a memo and an error message relayed from
// the exchange reach the terminal escaped, whatever the command prints
// them in (the trial's model name reached bourse market's table raw).
func TestPartyStringsPrintedSafely(t *testing.T) {
	d := decimal.RequireFromString
	sc := &scales{known: map[string]int32{"CRED": 2}}
	terms := contract.Terms{Currency: "CRED", GPUs: 1, Class: contract.Class{Model: evil}, TimeLimit: time.Minute,
		P: contract.Flat(d("0.01")), Prepayment: d("0.60")}
	k := protocol.ContractView{ID: "c-1", Client: "ada", Server: evil, Terms: terms, State: contract.StateSettled,
		Reason: contract.Reason(evil), Meter: contract.Meter(evil), Charge: d("0.10"), Refund: d("0.50")}
	outputs := map[string]func(w *strings.Builder){
		"market": func(w *strings.Builder) {
			_ = printMarket(w, []protocol.Market{{Currency: "CRED", Models: []protocol.MarketModel{{Model: evil}}}})
		},
		"counters": func(w *strings.Builder) {
			printCounterTable(w, protocol.OfferReply{
				Counters:   []contract.Counter{{ID: "k1", Server: evil, Terms: terms, Note: evil, ValidUntil: time.Now().Add(time.Minute)}},
				Rejections: []protocol.Rejection{{Server: evil, Reason: evil}}}, sc)
		},
		"contract": func(w *strings.Builder) { printContract(w, k, sc, "bourse bid") },
		"events": func(w *strings.Builder) {
			for _, typ := range []protocol.EventType{protocol.EventAccepted, protocol.EventStarted, protocol.EventSettled, protocol.EventVoided, protocol.EventSpendWarning, evil} {
				printEvent(w, bidder.Update{Type: typ, Contract: k, Warning: evil}, sc)
			}
		},
		"memo": func(w *strings.Builder) { w.WriteString(oneLine(evil)) },
		"error": func(w *strings.Builder) {
			w.WriteString(errorText(&bourse.Error{Code: bourse.ERejected, Message: "gpu1: " + evil}))
		},
	}
	for name, print := range outputs {
		var b strings.Builder
		print(&b)
		out := b.String()
		assert.NotContains(t, out, "\x1b", "%s: %q", name, out)
		assert.NotContains(t, out, "\r", "%s", name)
		assert.NotContains(t, out, "\u202e", "%s", name)
		assert.NotContains(t, out, "\nbourse: all good", "%s: a forged line", name)
		assert.Contains(t, out, `\x1b[2J`, "%s: shown, escaped: %q", name, out)
	}
}
