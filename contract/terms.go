package contract

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/bourse/bourse"
	"github.com/shopspring/decimal"
)

const (
	// MaxGPUs is the most GPUs one offer may ask for: more than any single
	// server holds, so a larger number is a typo or an attack.
	MaxGPUs = 1024

	// MaxTimeLimit is the longest time limit an offer may set. A year and a
	// day bounds the maximum charge and the escrow's lifetime.
	MaxTimeLimit = 366 * 24 * time.Hour
)

// Terms is an offer: a contract proposal from a client. The client pays
// U·P(U/T) + T·Q(S) for what it uses, at most its prepayment.
type Terms struct {
	Client      string          // who pays
	Currency    string          // code of the currency prices and prepayment are in
	GPUs        int             // g: GPUs wanted, 1..MaxGPUs
	Class       Class           // which GPUs qualify
	TimeLimit   time.Duration   // L: wall-clock limit, after which the server may stop the job
	Prepayment  decimal.Decimal // escrowed up front; the charge never exceeds it
	P           Curve           // price per GPU-second of use, by rate of use r = U/T in GPUs
	Q           Curve           // price per wall second, by minimum share S in GPUs; empty for none
	Preemptible bool            // the server may suspend the job for a guaranteed offer
	Server      string          // the one server the client names; empty for any that matches
	Job         *JobSpec        // what to run; nil where the exchange carries it separately
	// StartAt books the GPUs for a future slot: the job starts then, and
	// TimeLimit counts from then. Zero starts the job as soon as the offer
	// is accepted. Whether it is too far in the past or the future is for
	// the exchange to judge, by its clock.
	StartAt time.Time
}

// Class constrains which GPUs qualify; zero fields match any GPU.
type Class struct {
	Model        string // e.g. "H100"; empty for any
	MinMemoryMiB int    // least memory per GPU
}

// JobSpec is the process a server starts for the contract: a program
// the server lists (Command), or a container image the client names
// (Image), or a synthetic job (Profile).
//
// With an image, the job runs in a container made from it: Command, where
// given, replaces the image's entrypoint and command, and Args its command
// (as docker run's --entrypoint and arguments do); without either, the
// image's own entrypoint and command run.
//
// Files, where given, are the client's own, put in the job's working
// folder before it starts, for a program's or an image's job.
type JobSpec struct {
	Image   string // a reference, registry/repository[:tag][@digest] (ParseImageRef)
	Command string
	Args    []string
	Env     map[string]string
	Files   *Files
	Profile *Profile // for the synthetic runner, which consumes it instead of running Command
}

// Profile is a synthetic job: each of its GPUs busy a fraction Utilization
// (0..1) of the time, for Duration, then done.
type Profile struct {
	Utilization decimal.Decimal
	Duration    time.Duration
}

// Validate checks the terms against every rule of an offer. scaleOf gives
// the scale (decimal places) of a currency code and whether it exists. It
// returns the first broken rule as a *bourse.Error: EUnknownCurrency,
// EInvalidCurve (field "p[2].x"), EInvalid for a currency with an
// unusable scale, or EInvalidOffer naming the field ("prepayment").
func Validate(t Terms, scaleOf func(code string) (scale int32, ok bool)) error {
	const op = "contract.Validate"
	offer := func(field, format string, args ...any) error {
		return fail(bourse.EInvalidOffer, op, field, format, args...)
	}
	if t.Client == "" {
		return offer("client", "required")
	}
	if t.Currency == "" {
		return offer("currency", "required")
	}
	scale, ok := scaleOf(t.Currency)
	if !ok {
		return fail(bourse.EUnknownCurrency, op, "currency", "no currency %q", t.Currency)
	}
	if err := checkScale(op, scale); err != nil {
		return err
	}
	if err := validateShape(op, t); err != nil {
		return err
	}
	if why := checkNumber(t.Prepayment); why != "" {
		return offer("prepayment", "%s", why)
	}
	if t.Prepayment.Sign() <= 0 {
		return offer("prepayment", "%s; want more than 0", t.Prepayment)
	}
	if !hasPlaces(t.Prepayment, scale) {
		return offer("prepayment", "%s has more than %d decimal places, the scale of %s", t.Prepayment, scale, t.Currency)
	}
	if max := MaxCharge(t, scale); t.Prepayment.GreaterThan(max) {
		return offer("prepayment", "%s is more than the maximum charge %s", t.Prepayment, max)
	}
	return nil
}

// ValidateShape checks the rules of an offer that need neither its
// client, its currency nor its prepayment: the GPUs, class, time limit,
// price curves, start and job. A command line checks them before it
// connects to anything (the prepayment's default needs the currency's
// scale, which the exchange tells); Validate checks them too. Its errors
// are Validate's, naming the field.
func ValidateShape(t Terms) error { return validateShape("contract.ValidateShape", t) }

func validateShape(op string, t Terms) error {
	offer := func(field, format string, args ...any) error {
		return fail(bourse.EInvalidOffer, op, field, format, args...)
	}
	if t.GPUs < 1 || t.GPUs > MaxGPUs {
		return offer("gpus", "%d; want 1..%d", t.GPUs, MaxGPUs)
	}
	if t.Class.MinMemoryMiB < 0 {
		return offer("class.min_memory_mib", "negative: %d", t.Class.MinMemoryMiB)
	}
	if t.TimeLimit <= 0 || t.TimeLimit > MaxTimeLimit {
		return offer("time_limit", "%v; want more than 0 and at most %v", t.TimeLimit, MaxTimeLimit)
	}
	if err := t.P.validate(op, "p"); err != nil {
		return err
	}
	if err := t.Q.validate(op, "q"); err != nil {
		return err
	}
	if y := t.StartAt.UTC().Year(); !t.StartAt.IsZero() && (y < 1 || y > 9999) {
		return offer("start_at", "year %d in UTC; want 1..9999", y)
	}
	if t.Job != nil {
		return t.Job.validate(op)
	}
	return nil
}

func (j *JobSpec) validate(op string) error {
	offer := func(field, format string, args ...any) error {
		return fail(bourse.EInvalidOffer, op, field, format, args...)
	}
	// A NUL cannot pass through exec; refusing it here beats a failed start
	// after the prepayment is escrowed.
	if j.Command == "" && j.Image == "" && j.Profile == nil {
		return offer("job", "needs a command, an image or a profile")
	}
	if j.Image != "" {
		if _, err := ParseImageRef(j.Image); err != nil {
			return err
		}
	}
	if strings.ContainsRune(j.Command, 0) {
		return offer("job.command", "contains NUL")
	}
	if j.Files != nil {
		if j.Command == "" && j.Image == "" {
			return offer("job.files", "files are for a program or an image to work on: name a command or an image")
		}
		if err := j.Files.validate(op); err != nil {
			return err
		}
	}
	for i, a := range j.Args {
		if strings.ContainsRune(a, 0) {
			return offer(fmt.Sprintf("job.args[%d]", i), "contains NUL")
		}
	}
	if len(j.Env) > 0 { // sorted, so that the first bad one is always the same
		for _, k := range slices.Sorted(maps.Keys(j.Env)) {
			if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(j.Env[k], 0) {
				return offer("job.env", "bad variable %q: empty, or contains = or NUL", k)
			}
		}
	}
	if p := j.Profile; p != nil {
		if why := checkNumber(p.Utilization); why != "" {
			return offer("job.profile.utilization", "%s", why)
		}
		if p.Utilization.Sign() < 0 || p.Utilization.GreaterThan(one) {
			return offer("job.profile.utilization", "%s; want 0..1", p.Utilization)
		}
		if p.Duration <= 0 {
			return offer("job.profile.duration", "%v; want more than 0", p.Duration)
		}
	}
	return nil
}

func checkScale(op string, scale int32) error {
	if scale < 0 || scale > MaxPlaces {
		return fail(bourse.EInvalid, op, "scale", "%d; want 0..%d", scale, MaxPlaces)
	}
	return nil
}

// Equal reports whether t and u are the same terms, comparing numbers by
// value and treating empty and nil slices and maps alike, which is how a
// JSON round trip sees them.
func (t Terms) Equal(u Terms) bool {
	return t.Client == u.Client && t.Currency == u.Currency && t.GPUs == u.GPUs &&
		t.Class == u.Class && t.TimeLimit == u.TimeLimit && t.Prepayment.Equal(u.Prepayment) &&
		t.P.Equal(u.P) && t.Q.Equal(u.Q) && t.Preemptible == u.Preemptible &&
		t.Server == u.Server && t.Job.equal(u.Job) && t.StartAt.Equal(u.StartAt)
}

// IsZero reports whether t is no terms at all, as in an event that leaves
// them out (protocol.ContractChange): then encoding/json leaves them out
// too.
func (t Terms) IsZero() bool {
	return t.Equal(Terms{})
}

func (j *JobSpec) equal(k *JobSpec) bool {
	if j == nil || k == nil {
		return j == k
	}
	return j.Image == k.Image && j.Command == k.Command && slices.Equal(j.Args, k.Args) &&
		maps.Equal(j.Env, k.Env) && j.Files.equal(k.Files) && j.Profile.equal(k.Profile)
}

func (p *Profile) equal(q *Profile) bool {
	if p == nil || q == nil {
		return p == q
	}
	return p.Utilization.Equal(q.Utilization) && p.Duration == q.Duration
}
