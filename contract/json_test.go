package contract

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/internal/dectest"
)

// fullJSON is the example offer of docs/pricing.md, with every field.
const fullJSON = `{
  "client": "alice",
  "currency": "GPU",
  "gpus": 4,
  "class": {"model": "H100", "min_memory_mib": 81920},
  "time_limit": "10m",
  "prepayment": "12.50",
  "p": [["0.5", "0"], ["4", "0.01"]],
  "q": [["1", "0.001"]],
  "preemptible": true,
  "server": "node-7",
  "start_at": "2026-11-21T13:00:00+01:00",
  "job": {
    "command": "python",
    "args": ["train.py", "--epochs=3"],
    "env": {"SEED": "42"},
    "profile": {"utilization": "0.85", "duration": "8m"}
  }
}`

// fullCanonical is how MarshalJSON writes fullJSON back.
const fullCanonical = `{"client":"alice","currency":"GPU","gpus":4,"class":{"model":"H100","min_memory_mib":81920},` +
	`"time_limit":"10m0s","prepayment":"12.50","p":[["0.5","0"],["4","0.01"]],"q":[["1","0.001"]],` +
	`"preemptible":true,"server":"node-7","job":{"command":"python","args":["train.py","--epochs=3"],` +
	`"env":{"SEED":"42"},"profile":{"utilization":"0.85","duration":"8m0s"}},"start_at":"2026-11-21T12:00:00Z"}`

func fullTerms() Terms {
	return Terms{
		Client:      "alice",
		Currency:    "GPU",
		GPUs:        4,
		Class:       Class{Model: "H100", MinMemoryMiB: 81920},
		TimeLimit:   10 * time.Minute,
		Prepayment:  dectest.D("12.5"),
		P:           Ramp(dectest.D("0.5"), dectest.D("4"), dectest.D("0.01")),
		Q:           pts("1", "0.001"),
		Preemptible: true,
		Server:      "node-7",
		Job: &JobSpec{
			Command: "python",
			Args:    []string{"train.py", "--epochs=3"},
			Env:     map[string]string{"SEED": "42"},
			Profile: &Profile{Utilization: dectest.D("0.85"), Duration: 8 * time.Minute},
		},
		StartAt: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC),
	}
}

func TestParseTerms(t *testing.T) {
	got, err := ParseTerms([]byte(fullJSON))
	if err != nil {
		t.Fatalf("ParseTerms: %v", err)
	}
	if !got.Equal(fullTerms()) {
		t.Errorf("ParseTerms = %+v\nwant %+v", got, fullTerms())
	}
	if err := Validate(got, scales); err != nil {
		t.Errorf("the documented example is invalid: %v", err)
	}
	out, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != fullCanonical {
		t.Errorf("MarshalJSON =\n%s\nwant\n%s", out, fullCanonical)
	}
}

func TestParseTermsMinimal(t *testing.T) {
	got, err := ParseTerms([]byte(`{"client":"bob","currency":"GPU","gpus":2,"time_limit":"600s","prepayment":"12","p":[["0","0.01"]]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := gpuTerms(2, 10*time.Minute, Flat(dectest.D("0.01")), nil, "12")
	want.Client = "bob"
	if !got.Equal(want) || got.Job != nil {
		t.Errorf("got %+v, want %+v", got, want)
	}
	out, _ := json.Marshal(got)
	if want := `{"client":"bob","currency":"GPU","gpus":2,"time_limit":"10m0s","prepayment":"12","p":[["0","0.01"]]}`; string(out) != want {
		t.Errorf("MarshalJSON = %s, want %s", out, want)
	}
}

// offerWith writes a small valid offer with key's value replaced by raw
// JSON (or added, for a key it lacks).
func offerWith(key, raw string) string {
	fields := [][2]string{{"client", `"a"`}, {"currency", `"GPU"`}, {"gpus", `1`},
		{"time_limit", `"1h"`}, {"prepayment", `"1"`}, {"p", `[["0","0.01"]]`}}
	var b strings.Builder
	b.WriteString("{")
	added := key == ""
	for i, f := range fields {
		if i > 0 {
			b.WriteString(",")
		}
		if f[0] == key {
			f[1], added = raw, true
		}
		b.WriteString(`"` + f[0] + `":` + f[1])
	}
	if !added {
		b.WriteString(`,"` + key + `":` + raw)
	}
	return b.String() + "}"
}

func TestParseTermsErrors(t *testing.T) {
	if _, err := ParseTerms([]byte(offerWith("", ""))); err != nil {
		t.Fatalf("base offer: %v", err)
	}
	base := offerWith("", "")
	field := offerWith
	with := func(kv string) string { return strings.Replace(base, "{", "{"+kv+",", 1) }
	big := `{"client":"` + strings.Repeat("a", MaxTermsSize) + `"}`
	tests := []struct {
		name, in, field string
	}{
		{"empty input", ``, ""},
		{"not an object", `[]`, ""},
		{"a string", `"terms"`, ""},
		{"truncated", base[:len(base)-1], ""},
		{"malformed", `{"client" "a"}`, ""},
		{"trailing object", base + `{}`, ""},
		{"trailing garbage", base + ` x`, ""},
		{"too large", big, ""},
		{"unknown field", with(`"colour":"red"`), "colour"},
		{"unknown nested field", field("class", `{"vram":1}`), "class.vram"},
		{"unknown profile field", with(`"job":{"profile":{"util":"1"}}`), "job.profile.util"},
		{"case variant", with(`"Client":"b"`), "Client"},
		{"unicode case fold", with(`"ſerver":"x"`), "ſerver"},
		{"duplicate key", with(`"client":"b"`), "client"},
		{"duplicate nested key", with(`"class":{"model":"a","model":"b"}`), "class.model"},
		{"duplicate env key", with(`"job":{"command":"x","env":{"A":"1","A":"2"}}`), "job.env.A"},
		{"null", field("prepayment", `null`), "prepayment"},
		{"null job", with(`"job":null`), "job"},
		{"null in curve", field("p", `[["0",null]]`), "p[0][1]"},
		{"deep nesting", field("p", `[[[[[[[[[["0"]]]]]]]]]]`), "p[0][0][0][0][0][0][0]"},
		{"prepayment as number", field("prepayment", `1.5`), "prepayment"},
		{"prepayment NaN", field("prepayment", `"NaN"`), "prepayment"},
		{"prepayment Inf", field("prepayment", `"Inf"`), "prepayment"},
		{"prepayment -Infinity", field("prepayment", `"-Infinity"`), "prepayment"},
		{"prepayment absurd exponent", field("prepayment", `"1e999999"`), "prepayment"},
		{"prepayment small exponent", field("prepayment", `"1E-3"`), "prepayment"},
		{"prepayment empty", field("prepayment", `""`), "prepayment"},
		{"prepayment plus", field("prepayment", `"+1"`), "prepayment"},
		{"prepayment leading zero", field("prepayment", `"01"`), "prepayment"},
		{"prepayment no fraction digits", field("prepayment", `"1."`), "prepayment"},
		{"prepayment no integer digits", field("prepayment", `".5"`), "prepayment"},
		{"prepayment spaces", field("prepayment", `" 1"`), "prepayment"},
		{"prepayment 19 places", field("prepayment", `"0.0000000000000000001"`), "prepayment"},
		{"prepayment 19 digits", field("prepayment", `"1000000000000000000"`), "prepayment"},
		{"prepayment hex", field("prepayment", `"0x10"`), "prepayment"},
		{"time limit bare number", field("time_limit", `480`), "time_limit"},
		{"time limit string without unit", field("time_limit", `"480"`), "time_limit"},
		{"time limit zero without unit", field("time_limit", `"0"`), "time_limit"},
		{"time limit nonsense", field("time_limit", `"forever"`), "time_limit"},
		{"time limit overflow", field("time_limit", `"9999999999h"`), "time_limit"},
		{"gpus as string", field("gpus", `"4"`), "gpus"},
		{"gpus fraction", field("gpus", `1.5`), "gpus"},
		{"gpus exponent", field("gpus", `1e3`), "gpus"},
		{"gpus overflow", field("gpus", `99999999999999999999`), "gpus"},
		{"memory as string", with(`"class":{"min_memory_mib":"80GB"}`), "class.min_memory_mib"},
		{"preemptible as string", with(`"preemptible":"yes"`), "preemptible"},
		{"curve not an array", field("p", `"flat"`), "p"},
		{"curve numbers", field("p", `[[0,0.01]]`), "p"},
		{"curve single", field("p", `[["0"]]`), "p[0]"},
		{"curve triple", field("p", `[["0","1","2"]]`), "p[0]"},
		{"curve bad x", field("p", `[["0","0"],["x","1"]]`), "p[1].x"},
		{"curve bad y", field("q", `[["0","1e5"]]`), "q[0].y"},
		{"env value number", with(`"job":{"command":"x","env":{"A":1}}`), "job.env"},
		{"utilisation bad", with(`"job":{"profile":{"utilization":"85%","duration":"1m"}}`), "job.profile.utilization"},
		{"start_at as number", with(`"start_at":1795000000`), "start_at"},
		{"start_at without offset", with(`"start_at":"2026-11-21T12:00:00"`), "start_at"},
		{"start_at with a space", with(`"start_at":"2026-11-21 12:00:00Z"`), "start_at"},
		{"start_at a date", with(`"start_at":"2026-11-21"`), "start_at"},
		{"start_at empty", with(`"start_at":""`), "start_at"},
		{"start_at null", with(`"start_at":null`), "start_at"},
		{"start_at year 10000 in UTC", with(`"start_at":"9999-12-31T23:30:00-01:00"`), "start_at"},
		{"start_at year 0 in UTC", with(`"start_at":"0001-01-01T00:30:00+01:00"`), "start_at"},
		{"start_at duplicate", with(`"start_at":"2026-11-21T12:00:00Z","start_at":"2026-11-22T12:00:00Z"`), "start_at"},
		{"profile duration bare", with(`"job":{"profile":{"utilization":"1","duration":"60"}}`), "job.profile.duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseTerms([]byte(tt.in))
			wantErr(t, err, bourse.EInvalid, tt.field)
		})
	}
}

// TestStartAt: start_at is optional, read with its offset, written in UTC
// with the fraction it has, and compared as an instant.
func TestStartAt(t *testing.T) {
	for in, want := range map[string]string{
		`"2026-11-21T12:00:00Z"`:           `"2026-11-21T12:00:00Z"`,
		`"2026-11-21T13:30:00+01:30"`:      `"2026-11-21T12:00:00Z"`,
		`"2026-11-21T12:00:00.250-00:00"`:  `"2026-11-21T12:00:00.25Z"`,
		`"2026-11-21T12:00:00.000000001Z"`: `"2026-11-21T12:00:00.000000001Z"`,
	} {
		got, err := ParseTerms([]byte(offerWith("start_at", in)))
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		out, _ := json.Marshal(got)
		if !strings.Contains(string(out), `"start_at":`+want) {
			t.Errorf("%s: MarshalJSON = %s, want start_at %s", in, out, want)
		}
		back, err := ParseTerms(out)
		if err != nil || !back.Equal(got) {
			t.Errorf("%s: round trip: %v, %v", in, err, back.StartAt)
		}
	}
	a, b := validTerms(), validTerms()
	a.StartAt = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	b.StartAt = a.StartAt.In(time.FixedZone("X", 3600))
	if !a.Equal(b) {
		t.Error("one instant in two zones differs")
	}
	if b.StartAt = b.StartAt.Add(time.Nanosecond); a.Equal(b) {
		t.Error("different starts are equal")
	}
	if a.Equal(validTerms()) {
		t.Error("a start and none are equal")
	}
}

// TestParseTermsFormOnly shows that parsing leaves the rules to Validate.
func TestParseTermsFormOnly(t *testing.T) {
	got, err := ParseTerms([]byte(`{"client":"","gpus":-1,"time_limit":"-5s","prepayment":"-1","p":[["1","0"],["0","-1"]]}`))
	if err != nil {
		t.Fatalf("ParseTerms: %v", err)
	}
	if got.GPUs != -1 || got.TimeLimit != -5*time.Second || !got.Prepayment.Equal(dectest.D("-1")) {
		t.Errorf("got %+v", got)
	}
	wantErr(t, Validate(got, scales), bourse.EInvalidOffer, "client")
}

// TestTermsInMessage checks terms inside a larger JSON message: strict
// there too, and a round trip.
func TestTermsInMessage(t *testing.T) {
	type offer struct {
		ID    string `json:"id"`
		Terms Terms  `json:"terms"`
	}
	var m offer
	if err := json.Unmarshal([]byte(`{"id":"o1","terms":`+fullJSON+`}`), &m); err != nil {
		t.Fatal(err)
	}
	if !m.Terms.Equal(fullTerms()) {
		t.Errorf("terms = %+v", m.Terms)
	}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var back offer
	if err := json.Unmarshal(out, &back); err != nil || !back.Terms.Equal(m.Terms) {
		t.Errorf("round trip: %v, %+v", err, back.Terms)
	}
	err = json.Unmarshal([]byte(`{"id":"o2","terms":{"client":"a","client":"b"}}`), &m)
	wantErr(t, err, bourse.EInvalid, "client")
}

func TestCurveJSON(t *testing.T) {
	c := pts("0.5", "0", "4", "0.010")
	out, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if want := `[["0.5","0"],["4","0.010"]]`; string(out) != want {
		t.Errorf("Marshal = %s, want %s", out, want)
	}
	var back Curve
	if err := json.Unmarshal(out, &back); err != nil || !back.Equal(c) {
		t.Errorf("round trip: %v, %v", err, back)
	}
	if out, _ := json.Marshal(Curve(nil)); string(out) != `[]` {
		t.Errorf("empty curve = %s, want []", out)
	}
	for in, field := range map[string]string{
		`[["0"]]`:       "[0]",
		`[["0","NaN"]]`: "[0].y",
		`[[0,1]]`:       "",
		`{"x":1}`:       "",
	} {
		var c Curve
		wantErr(t, json.Unmarshal([]byte(in), &c), bourse.EInvalid, field)
	}
}
