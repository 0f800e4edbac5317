// Package audit checks a simulator's contract log (docs/sim.md, "The
// contract log") on its own: every settled charge is priced again from
// the terms on the contract's accepted line and the final reading on its
// settled line with docs/pricing.md's formula, written here a second time
// on exact rationals (price.go) rather than taken from package contract,
// and every contract's money must add up: charge + refund = prepayment,
// 0 ≤ charge ≤ prepayment, a voided contract refunded whole, and every
// contract accepted ends once. `bourse sim audit` runs it on log files.
package audit

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"strings"
)

// Mismatch is a line of a log that does not add up: the contract, the
// field and what the line says beside what it should.
type Mismatch struct {
	Line     int
	Contract string
	Field    string
	Got      string
	Want     string
}

func (m *Mismatch) Error() string {
	return fmt.Sprintf("line %d: contract %s: %s is %s, want %s", m.Line, m.Contract, m.Field, m.Got, m.Want)
}

// ErrMalformed is wrapped by the error of a line that cannot be read as a
// log line at all.
var ErrMalformed = errors.New("malformed contract log line")

// Report is what Check found in one log.
type Report struct {
	Lines    int
	Accepted int
	Settled  int // charges priced again, each equal to the log's
	Voided   int
	// Charged and Refunded are the sums over settled and voided
	// contracts, as exact decimals.
	Charged, Refunded string
	// Open are contracts accepted that the log never ends: a run cut off
	// by its limit leaves some; a finished one none.
	Open int
	// Mismatches are the lines that do not add up, in order.
	Mismatches []*Mismatch
}

// OK says the log adds up: no mismatch.
func (r Report) OK() bool { return len(r.Mismatches) == 0 }

// line is a log line as Check reads it: the fields the money needs.
type line struct {
	Type       string      `json:"type"`
	Contract   string      `json:"contract"`
	GPUs       int64       `json:"gpus"`
	TimeLimit  *string     `json:"time_limit_s"`
	Prepayment *string     `json:"prepayment"`
	P          *[][]string `json:"p"`
	Q          *[][]string `json:"q"`
	Scale      *int32      `json:"scale"`
	U          *string     `json:"u"`
	T          *string     `json:"t_s"`
	S          *string     `json:"s"`
	Charge     *string     `json:"charge"`
	Refund     *string     `json:"refund"`
}

// Check reads a contract log and checks every contract in it. An error
// is a log that cannot be read (a malformed line, a settlement of a
// contract never accepted); what does not add up is in the Report.
func Check(r io.Reader) (Report, error) {
	var rep Report
	open := map[string]terms{}
	charged, refunded := new(big.Rat), new(big.Rat)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		rep.Lines++
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return rep, fmt.Errorf("audit: line %d: %w: %w", rep.Lines, ErrMalformed, err)
		}
		bad := func(format string, args ...any) error {
			return fmt.Errorf("audit: line %d: contract %s: %w: %s", rep.Lines, l.Contract, ErrMalformed, fmt.Sprintf(format, args...))
		}
		switch l.Type {
		case "accepted":
			t, err := l.terms()
			if err != nil {
				return rep, bad("%v", err)
			}
			if _, dup := open[l.Contract]; dup {
				return rep, bad("accepted twice")
			}
			open[l.Contract] = t
			rep.Accepted++
		case "started":
			if _, ok := open[l.Contract]; !ok {
				return rep, bad("started but never accepted (or already ended)")
			}
		case "settled", "voided":
			t, ok := open[l.Contract]
			if !ok {
				return rep, bad("%s but never accepted (or already ended)", l.Type)
			}
			delete(open, l.Contract)
			got, err := l.money()
			if err != nil {
				return rep, bad("%v", err)
			}
			want := settlement{charge: new(big.Rat), refund: t.prepayment}
			if l.Type == "settled" {
				x, err := l.usage()
				if err != nil {
					return rep, bad("%v", err)
				}
				if want, err = settle(t, x); err != nil {
					return rep, bad("%v", err)
				}
				rep.Settled++
			} else {
				rep.Voided++
			}
			rep.compare(l.Contract, "charge", got.charge, want.charge, t.scale)
			rep.compare(l.Contract, "refund", got.refund, want.refund, t.scale)
			charged.Add(charged, got.charge)
			refunded.Add(refunded, got.refund)
		default:
			return rep, bad("type %q is none of accepted, started, settled, voided", l.Type)
		}
	}
	if err := sc.Err(); err != nil {
		return rep, fmt.Errorf("audit: line %d: %w", rep.Lines+1, err)
	}
	rep.Open = len(open)
	rep.Charged, rep.Refunded = charged.FloatString(18), refunded.FloatString(18)
	rep.Charged, rep.Refunded = trimZeros(rep.Charged), trimZeros(rep.Refunded)
	return rep, nil
}

func (rep *Report) compare(contract, field string, got, want *big.Rat, scale int32) {
	if got.Cmp(want) != 0 {
		rep.Mismatches = append(rep.Mismatches, &Mismatch{Line: rep.Lines, Contract: contract, Field: field,
			Got: trimZeros(got.FloatString(int(scale))), Want: trimZeros(want.FloatString(int(scale)))})
	}
}

func (l line) terms() (terms, error) {
	if l.TimeLimit == nil || l.Prepayment == nil || l.P == nil || l.Q == nil || l.Scale == nil {
		return terms{}, errors.New("an accepted line needs time_limit_s, prepayment, p, q and scale")
	}
	if l.GPUs < 1 {
		return terms{}, fmt.Errorf("gpus %d", l.GPUs)
	}
	t := terms{gpus: l.GPUs, scale: *l.Scale}
	var err error
	if t.limit, err = parseDecimal(*l.TimeLimit); err != nil {
		return terms{}, fmt.Errorf("time_limit_s: %w", err)
	}
	if t.prepayment, err = parseDecimal(*l.Prepayment); err != nil {
		return terms{}, fmt.Errorf("prepayment: %w", err)
	}
	if t.p, err = parseCurve(*l.P); err != nil {
		return terms{}, fmt.Errorf("p: %w", err)
	}
	if t.q, err = parseCurve(*l.Q); err != nil {
		return terms{}, fmt.Errorf("q: %w", err)
	}
	return t, nil
}

func (l line) usage() (usage, error) {
	if l.U == nil || l.T == nil || l.S == nil {
		return usage{}, errors.New("a settled line needs u, t_s and s")
	}
	var x usage
	var err error
	for _, f := range []struct {
		name string
		s    string
		to   **big.Rat
	}{{"u", *l.U, &x.u}, {"t_s", *l.T, &x.t}, {"s", *l.S, &x.s}} {
		if *f.to, err = parseDecimal(f.s); err != nil {
			return usage{}, fmt.Errorf("%s: %w", f.name, err)
		}
	}
	return x, nil
}

func (l line) money() (settlement, error) {
	if l.Charge == nil || l.Refund == nil {
		return settlement{}, errors.New("an ended contract's line needs charge and refund")
	}
	c, err := parseDecimal(*l.Charge)
	if err != nil {
		return settlement{}, fmt.Errorf("charge: %w", err)
	}
	r, err := parseDecimal(*l.Refund)
	if err != nil {
		return settlement{}, fmt.Errorf("refund: %w", err)
	}
	return settlement{charge: c, refund: r}, nil
}

// parseCurve reads [["x","y"],…] and checks what makes it a curve:
// strictly increasing x, non-decreasing y, nothing negative.
func parseCurve(pts [][]string) (curve, error) {
	c := make(curve, len(pts))
	for i, p := range pts {
		if len(p) != 2 {
			return nil, fmt.Errorf("point %d has %d numbers, want 2", i, len(p))
		}
		x, err := parseDecimal(p[0])
		if err != nil {
			return nil, fmt.Errorf("point %d: %w", i, err)
		}
		y, err := parseDecimal(p[1])
		if err != nil {
			return nil, fmt.Errorf("point %d: %w", i, err)
		}
		if x.Sign() < 0 || y.Sign() < 0 || (i > 0 && (x.Cmp(c[i-1].x) <= 0 || y.Cmp(c[i-1].y) < 0)) {
			return nil, fmt.Errorf("point %d (%s, %s) breaks a curve's rules", i, p[0], p[1])
		}
		c[i] = point{x, y}
	}
	return c, nil
}

// trimZeros drops a fixed-point string's trailing zeros, and its point
// if nothing follows it.
func trimZeros(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	return strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
}
