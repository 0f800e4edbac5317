package contract

import (
	"strings"
	"testing"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/shopspring/decimal"
)

// scales is the currency table of the tests: GPU has two places.
func scales(code string) (int32, bool) {
	s, ok := map[string]int32{"GPU": 2, "WHOLE": 0, "BROKEN": MaxPlaces + 1}[code]
	return s, ok
}

// validTerms are 4 GPUs for 8 minutes at 0.01 per GPU-second, max 19.20.
// goodDigest is a files digest of the right form.
var goodDigest = "sha256:" + strings.Repeat("0f", 32)

func validTerms() Terms {
	return Terms{
		Client:     "alice",
		Currency:   "GPU",
		GPUs:       4,
		Class:      Class{Model: "H100", MinMemoryMiB: 81920},
		TimeLimit:  480 * time.Second,
		Prepayment: dectest.D("19.20"),
		P:          Flat(dectest.D("0.01")),
		Job:        &JobSpec{Command: "train", Args: []string{"--epochs", "3"}, Env: map[string]string{"SEED": "1"}},
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*Terms)
		code  bourse.Code // "" for valid terms
		field string
	}{
		{"valid", func(*Terms) {}, "", ""},
		{"valid: prepayment below the maximum", func(t *Terms) { t.Prepayment = dectest.D("0.01") }, "", ""},
		{"valid: MaxGPUs and MaxTimeLimit", func(t *Terms) { t.GPUs, t.TimeLimit = MaxGPUs, MaxTimeLimit }, "", ""},
		{"valid: only a Q term", func(t *Terms) { t.P, t.Q = nil, Ramp(dectest.D("0"), dectest.D("4"), dectest.D("1")) }, "", ""},
		{"valid: synthetic job", func(t *Terms) {
			t.Job = &JobSpec{Profile: &Profile{Utilization: dectest.D("1"), Duration: time.Minute}}
		}, "", ""},
		{"valid: no job", func(t *Terms) { t.Job = nil }, "", ""},
		{"valid: currency of scale 0", func(t *Terms) { t.Currency, t.Prepayment = "WHOLE", dectest.D("19") }, "", ""},

		{"valid: a start in the past (the exchange judges it)", func(t *Terms) { t.StartAt = time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC) }, "", ""},
		{"valid: a start far ahead", func(t *Terms) { t.StartAt = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC) }, "", ""},

		{"start in year 10000", func(t *Terms) { t.StartAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }, bourse.EInvalidOffer, "start_at"},
		{"no client", func(t *Terms) { t.Client = "" }, bourse.EInvalidOffer, "client"},
		{"no currency", func(t *Terms) { t.Currency = "" }, bourse.EInvalidOffer, "currency"},
		{"unknown currency", func(t *Terms) { t.Currency = "XYZ" }, bourse.EUnknownCurrency, "currency"},
		{"currency scale out of range", func(t *Terms) { t.Currency = "BROKEN" }, bourse.EInvalid, "scale"},
		{"no GPUs", func(t *Terms) { t.GPUs = 0 }, bourse.EInvalidOffer, "gpus"},
		{"negative GPUs", func(t *Terms) { t.GPUs = -1 }, bourse.EInvalidOffer, "gpus"},
		{"too many GPUs", func(t *Terms) { t.GPUs = MaxGPUs + 1 }, bourse.EInvalidOffer, "gpus"},
		{"negative memory", func(t *Terms) { t.Class.MinMemoryMiB = -1 }, bourse.EInvalidOffer, "class.min_memory_mib"},
		{"zero time limit", func(t *Terms) { t.TimeLimit = 0 }, bourse.EInvalidOffer, "time_limit"},
		{"negative time limit", func(t *Terms) { t.TimeLimit = -time.Second }, bourse.EInvalidOffer, "time_limit"},
		{"time limit too long", func(t *Terms) { t.TimeLimit = MaxTimeLimit + time.Nanosecond }, bourse.EInvalidOffer, "time_limit"},
		{"p unsorted", func(t *Terms) { t.P = pts("0", "0", "2", "1", "1", "1") }, bourse.EInvalidCurve, "p[2].x"},
		{"p duplicate x", func(t *Terms) { t.P = pts("0", "0", "0", "1") }, bourse.EInvalidCurve, "p[1].x"},
		{"p negative y", func(t *Terms) { t.P = pts("0", "-0.01") }, bourse.EInvalidCurve, "p[0].y"},
		{"p too many points", func(t *Terms) { t.P = make(Curve, MaxPoints+1) }, bourse.EInvalidCurve, "p"},
		{"q decreasing", func(t *Terms) { t.Q = pts("0", "2", "1", "1") }, bourse.EInvalidCurve, "q[1].y"},
		{"q negative x", func(t *Terms) { t.Q = pts("-1", "1") }, bourse.EInvalidCurve, "q[0].x"},
		{"zero prepayment", func(t *Terms) { t.Prepayment = decimal.Zero }, bourse.EInvalidOffer, "prepayment"},
		{"negative prepayment", func(t *Terms) { t.Prepayment = dectest.D("-1") }, bourse.EInvalidOffer, "prepayment"},
		{"prepayment finer than the currency", func(t *Terms) { t.Prepayment = dectest.D("1.001") }, bourse.EInvalidOffer, "prepayment"},
		{"prepayment finer than scale 0", func(t *Terms) { t.Currency, t.Prepayment = "WHOLE", dectest.D("1.5") }, bourse.EInvalidOffer, "prepayment"},
		{"prepayment above the maximum charge", func(t *Terms) { t.Prepayment = dectest.D("19.21") }, bourse.EInvalidOffer, "prepayment"},
		{"free terms cannot be prepaid", func(t *Terms) { t.P = nil }, bourse.EInvalidOffer, "prepayment"},
		{"absurd prepayment exponent", func(t *Terms) { t.Prepayment = decimal.New(1, -2000000000) }, bourse.EInvalidOffer, "prepayment"},
		{"empty job", func(t *Terms) { t.Job = &JobSpec{} }, bourse.EInvalidOffer, "job"},
		{"NUL in command", func(t *Terms) { t.Job.Command = "a\x00b" }, bourse.EInvalidOffer, "job.command"},
		{"an image alone", func(t *Terms) { t.Job = &JobSpec{Image: "ghcr.io/acme/train:v1"} }, "", ""},
		{"an image and its command", func(t *Terms) { t.Job.Image = "busybox" }, "", ""},
		{"a malformed image", func(t *Terms) { t.Job = &JobSpec{Image: "Acme/Train"} }, bourse.EInvalidOffer, "job.image"},
		{"NUL in an argument", func(t *Terms) { t.Job.Args[1] = "\x00" }, bourse.EInvalidOffer, "job.args[1]"},
		{"files", func(t *Terms) { t.Job.Files = &Files{Digest: goodDigest, Bytes: 10240} }, "", ""},
		{"an image's files", func(t *Terms) { t.Job = &JobSpec{Image: "busybox", Files: &Files{Digest: goodDigest, Bytes: 1}} }, "", ""},
		{"files for a profile", func(t *Terms) {
			t.Job = &JobSpec{Profile: &Profile{Utilization: dectest.D("1"), Duration: time.Second}, Files: &Files{Digest: goodDigest, Bytes: 1}}
		}, bourse.EInvalidOffer, "job.files"},
		{"files digest not sha256", func(t *Terms) { t.Job.Files = &Files{Digest: "sha512:" + strings.Repeat("a", 64), Bytes: 1} }, bourse.EInvalidOffer, "job.files.digest"},
		{"files digest upper case", func(t *Terms) { t.Job.Files = &Files{Digest: strings.ToUpper(goodDigest), Bytes: 1} }, bourse.EInvalidOffer, "job.files.digest"},
		{"files digest short", func(t *Terms) { t.Job.Files = &Files{Digest: goodDigest[:70], Bytes: 1} }, bourse.EInvalidOffer, "job.files.digest"},
		{"files of no bytes", func(t *Terms) { t.Job.Files = &Files{Digest: goodDigest} }, bourse.EInvalidOffer, "job.files.bytes"},
		{"files too large", func(t *Terms) { t.Job.Files = &Files{Digest: goodDigest, Bytes: MaxFilesBytes + 1} }, bourse.EInvalidOffer, "job.files.bytes"},
		{"= in an env name", func(t *Terms) { t.Job.Env["A=B"] = "1" }, bourse.EInvalidOffer, "job.env"},
		{"empty env name", func(t *Terms) { t.Job.Env[""] = "1" }, bourse.EInvalidOffer, "job.env"},
		{"NUL in an env value", func(t *Terms) { t.Job.Env["X"] = "\x00" }, bourse.EInvalidOffer, "job.env"},
		{"utilisation above 1", func(t *Terms) { t.Job.Profile = &Profile{Utilization: dectest.D("1.01"), Duration: time.Second} }, bourse.EInvalidOffer, "job.profile.utilization"},
		{"negative utilisation", func(t *Terms) { t.Job.Profile = &Profile{Utilization: dectest.D("-0.5"), Duration: time.Second} }, bourse.EInvalidOffer, "job.profile.utilization"},
		{"no profile duration", func(t *Terms) { t.Job.Profile = &Profile{Utilization: dectest.D("0.5")} }, bourse.EInvalidOffer, "job.profile.duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			terms := validTerms()
			tt.edit(&terms)
			// ValidateShape, which a command line runs before it knows the
			// currency, breaks on the same rules but those of the client,
			// the currency and the prepayment.
			shape := ValidateShape(terms)
			switch tt.field {
			case "", "client", "currency", "scale", "prepayment":
				if shape != nil {
					t.Errorf("ValidateShape: %v", shape)
				}
			default:
				wantErr(t, shape, tt.code, tt.field)
			}
			err := Validate(terms, scales)
			if tt.code == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			wantErr(t, err, tt.code, tt.field)
		})
	}
}

func TestValidateSaysWhy(t *testing.T) {
	terms := validTerms()
	terms.Prepayment = dectest.D("19.21")
	err := Validate(terms, scales)
	if msg := bourse.ErrorMessage(err); !strings.Contains(msg, "maximum charge 19.2") {
		t.Errorf("message %q does not give the maximum charge", msg)
	}
}

func TestTermsEqual(t *testing.T) {
	a, b := validTerms(), validTerms()
	b.Prepayment = dectest.D("19.2")
	if !a.Equal(b) {
		t.Error("19.20 and 19.2 differ")
	}
	b.Job.Args = append(b.Job.Args, "x")
	if a.Equal(b) {
		t.Error("different args are equal")
	}
	b = validTerms()
	b.Job.Image = "busybox"
	if a.Equal(b) {
		t.Error("an image and none are equal")
	}
	b = validTerms()
	b.Job.Profile = &Profile{}
	if a.Equal(b) {
		t.Error("a profile and none are equal")
	}
	b = validTerms()
	b.Job = nil
	if a.Equal(b) || b.Equal(a) {
		t.Error("a job and none are equal")
	}
}

// TestModelSold: a contract counts as the model its server sold, else
// the model it asked for, else any.
func TestModelSold(t *testing.T) {
	for _, tc := range []struct {
		sold  string
		asked Class
		want  string
	}{
		{"H100", Class{}, "H100"},
		{"H100", Class{Model: "h100"}, "H100"},
		{"", Class{Model: "A100"}, "A100"},
		{"", Class{MinMemoryMiB: 80000}, "any"},
	} {
		if got := ModelSold(tc.sold, tc.asked); got != tc.want {
			t.Errorf("ModelSold(%q, %+v) = %q, want %q", tc.sold, tc.asked, got, tc.want)
		}
	}
}
