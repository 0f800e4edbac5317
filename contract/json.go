package contract

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/bourse/bourse"
	"github.com/shopspring/decimal"
)

// MaxTermsSize is the largest encoded offer ParseTerms reads, in bytes.
const MaxTermsSize = 64 << 10

// termsJSON is the wire form of Terms. Amounts and durations are strings
// so that no JSON library turns them into floats on the way; pointers tell
// an absent field (the zero value, for Validate to judge) from an empty
// string (malformed).
type termsJSON struct {
	Client      string     `json:"client"`
	Currency    string     `json:"currency"`
	GPUs        int        `json:"gpus"`
	Class       *classJSON `json:"class,omitempty"`
	TimeLimit   *string    `json:"time_limit"`
	Prepayment  *string    `json:"prepayment"`
	P           [][]string `json:"p"`
	Q           [][]string `json:"q,omitempty"`
	Preemptible bool       `json:"preemptible,omitempty"`
	Server      string     `json:"server,omitempty"`
	Job         *jobJSON   `json:"job,omitempty"`
	StartAt     *string    `json:"start_at,omitempty"`
}

type classJSON struct {
	Model        string `json:"model,omitempty"`
	MinMemoryMiB int    `json:"min_memory_mib,omitempty"`
}

type jobJSON struct {
	Image   string            `json:"image,omitempty"`
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Files   *filesJSON        `json:"files,omitempty"`
	Profile *profileJSON      `json:"profile,omitempty"`
}

type filesJSON struct {
	Digest string `json:"digest"`
	Bytes  int64  `json:"bytes"`
}

type profileJSON struct {
	Utilization *string `json:"utilization"`
	Duration    *string `json:"duration"`
}

// ParseTerms decodes one offer from strict JSON (docs/pricing.md has the
// form): exact snake_case keys, no unknown, duplicate or null fields,
// amounts as decimal strings ("12.50"), durations as strings with a unit
// ("10m"), curves as [x, y] string pairs, nothing after the object. Errors
// are *bourse.Error with code EInvalid and the offending field. ParseTerms
// checks form, not rules: call Validate on the result.
func ParseTerms(data []byte) (Terms, error) {
	return parseTerms("contract.ParseTerms", data)
}

func parseTerms(op string, data []byte) (Terms, error) {
	if len(data) > MaxTermsSize {
		return Terms{}, fail(bourse.EInvalid, op, "", "%d bytes; at most %d", len(data), MaxTermsSize)
	}
	if err := checkStrict(op, data); err != nil {
		return Terms{}, err
	}
	w, err := decodeWire(data)
	if err != nil {
		return Terms{}, decodeError(op, err)
	}
	return w.terms(op)
}

func (w *termsJSON) terms(op string) (Terms, error) {
	t := Terms{
		Client:      w.Client,
		Currency:    w.Currency,
		GPUs:        w.GPUs,
		Preemptible: w.Preemptible,
		Server:      w.Server,
	}
	if w.Class != nil {
		t.Class = Class{Model: w.Class.Model, MinMemoryMiB: w.Class.MinMemoryMiB}
	}
	var err error
	if t.TimeLimit, err = durationFrom(op, "time_limit", w.TimeLimit); err != nil {
		return Terms{}, err
	}
	if t.Prepayment, err = decimalFrom(op, "prepayment", w.Prepayment); err != nil {
		return Terms{}, err
	}
	if t.P, err = curveFrom(op, "p", w.P); err != nil {
		return Terms{}, err
	}
	if t.Q, err = curveFrom(op, "q", w.Q); err != nil {
		return Terms{}, err
	}
	if t.StartAt, err = timeFrom(op, "start_at", w.StartAt); err != nil {
		return Terms{}, err
	}
	if j := w.Job; j != nil {
		t.Job = &JobSpec{Image: j.Image, Command: j.Command, Args: j.Args, Env: j.Env}
		if f := j.Files; f != nil {
			t.Job.Files = &Files{Digest: f.Digest, Bytes: f.Bytes}
		}
		if p := j.Profile; p != nil {
			t.Job.Profile = new(Profile)
			if t.Job.Profile.Utilization, err = decimalFrom(op, "job.profile.utilization", p.Utilization); err != nil {
				return Terms{}, err
			}
			if t.Job.Profile.Duration, err = durationFrom(op, "job.profile.duration", p.Duration); err != nil {
				return Terms{}, err
			}
		}
	}
	return t, nil
}

// UnmarshalJSON reads terms as strictly as ParseTerms, so that terms inside
// a larger message are checked alike. Field names in its errors are
// relative to the terms object. A null leaves t unchanged, as encoding/json
// expects.
func (t *Terms) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		return nil
	}
	u, err := parseTerms("contract.Terms.UnmarshalJSON", data)
	if err != nil {
		return err
	}
	*t = u
	return nil
}

// UnmarshalJSON reads the form MarshalJSON writes. It checks the form only;
// call Validate for the rules. A null leaves c unchanged.
func (c *Curve) UnmarshalJSON(data []byte) error {
	const op = "contract.Curve.UnmarshalJSON"
	if string(data) == "null" {
		return nil
	}
	var pairs [][]string
	if err := json.Unmarshal(data, &pairs); err != nil {
		return decodeError(op, err)
	}
	d, err := curveFrom(op, "", pairs)
	if err != nil {
		return err
	}
	*c = d
	return nil
}

func curveFrom(op, field string, pairs [][]string) (Curve, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	c := make(Curve, len(pairs))
	at := func(i int) string { return fmt.Sprintf("%s[%d]", field, i) } // for errors only
	for i, pair := range pairs {
		if len(pair) != 2 {
			return nil, fail(bourse.EInvalid, op, at(i), "want an [x, y] pair of decimal strings, got %d elements", len(pair))
		}
		var why string
		if c[i].X, why = parseDecimal(pair[0]); why != "" {
			return nil, fail(bourse.EInvalid, op, at(i)+".x", "%s", why)
		}
		if c[i].Y, why = parseDecimal(pair[1]); why != "" {
			return nil, fail(bourse.EInvalid, op, at(i)+".y", "%s", why)
		}
	}
	return c, nil
}

func decimalFrom(op, field string, s *string) (decimal.Decimal, error) {
	if s == nil {
		return decimal.Zero, nil
	}
	d, why := parseDecimal(*s)
	if why != "" {
		return decimal.Zero, fail(bourse.EInvalid, op, field, "%s", why)
	}
	return d, nil
}

// durationFrom reads a Go duration that names its unit ("480s", "1h30m"): a
// bare "480" could mean seconds or minutes, so it is refused.
func durationFrom(op, field string, s *string) (time.Duration, error) {
	if s == nil {
		return 0, nil
	}
	if strings.Trim(*s, "+-.0123456789") == "" {
		return 0, fail(bourse.EInvalid, op, field, "%q needs a unit, like \"10m\" or \"480s\"", *s)
	}
	d, err := time.ParseDuration(*s)
	if err != nil {
		return 0, fail(bourse.EInvalid, op, field, "%q is not a duration like \"10m\" or \"480s\"", *s)
	}
	return d, nil
}

// timeFrom reads an RFC 3339 time with its offset ("2026-11-21T12:00:00Z",
// "2026-11-21T13:00:00.5+01:00"): a time without one would mean the
// reader's zone, which differs from the writer's.
func timeFrom(op, field string, s *string) (time.Time, error) {
	if s == nil {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, *s)
	if err != nil {
		return time.Time{}, fail(bourse.EInvalid, op, field, "%q is not an RFC 3339 time like \"2026-11-21T12:00:00Z\"", *s)
	}
	// MarshalJSON writes UTC, which must have a four-digit year too.
	if t = t.UTC(); t.Year() < 1 || t.Year() > 9999 {
		return time.Time{}, fail(bourse.EInvalid, op, field, "%q is out of range: in UTC, years 0001..9999", *s)
	}
	return t, nil
}

// decodeError turns encoding/json's errors into *bourse.Error.
func decodeError(op string, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fail(bourse.EInvalid, op, "", "malformed JSON at byte %d: %v", syn.Offset, syn)
	case errors.As(err, &typ):
		want := kind(typ.Type.String())
		if want == "a string" && strings.HasPrefix(typ.Value, "number") {
			want += ` (amounts and durations are strings, like "12.50" and "10m")`
		}
		return fail(bourse.EInvalid, op, typ.Field, "want %s, got %s", want, typ.Value)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fail(bourse.EInvalid, op, "", "truncated JSON")
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fail(bourse.EInvalid, op, strings.Trim(name, `"`), "unknown field")
	}
	return fail(bourse.EInvalid, op, "", "%v", err)
}

// kind names a wire type for a person: amounts are strings, counts integers.
func kind(goType string) string {
	switch {
	case goType == "string", goType == "*string":
		return "a string"
	case goType == "int":
		return "an integer"
	case goType == "bool":
		return "true or false"
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	default:
		return "an object"
	}
}

func ptr[T any](v T) *T { return &v }
