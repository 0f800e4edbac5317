package currency

import (
	"fmt"
	"strings"
)

// Rules that Audit checks, one name per invariant of the design.
const (
	RuleZeroSum         = "zero_sum"       // per currency, the balances sum to zero
	RuleNonNegative     = "non_negative"   // no account but issuance is below zero
	RuleEntries         = "entries"        // each balance equals the sum of its entries and its last running balance
	RuleDoubleEntry     = "double_entry"   // each movement has exactly its two entries, of one currency
	RuleAppliedOnce     = "applied_once"   // no movement ID (so no key, no hold resolution) twice
	RuleConversionWhole = "exchange_whole" // a conversion's two legs are both posted, or neither (the code keeps its name before)
	RuleHoldBalanced    = "hold_balanced"  // open holds: escrow = amount; resolved: escrow = 0 and captured + released = amount
)

// Violation is one broken invariant.
type Violation struct {
	Rule     string    `json:"rule"`
	Currency Code      `json:"currency,omitempty"`
	Account  AccountID `json:"account,omitempty"`
	Hold     HoldID    `json:"hold,omitempty"`
	Detail   string    `json:"detail"`
}

func (v Violation) String() string {
	var who []string
	for _, s := range []string{string(v.Currency), string(v.Account), string(v.Hold)} {
		if s != "" {
			who = append(who, s)
		}
	}
	return fmt.Sprintf("%s %s: %s", v.Rule, strings.Join(who, " "), v.Detail)
}

// Report is what Audit counted and found.
type Report struct {
	Currencies int         `json:"currencies"`
	Accounts   int         `json:"accounts"`
	Movements  int         `json:"movements"`
	Holds      int         `json:"holds"`
	OpenHolds  int         `json:"open_holds"`
	Violations []Violation `json:"violations"`
}

// OK reports whether no invariant is broken.
func (r Report) OK() bool { return len(r.Violations) == 0 }

func (r Report) String() string {
	s := fmt.Sprintf("audit: %d currencies, %d accounts, %d movements, %d holds (%d open)",
		r.Currencies, r.Accounts, r.Movements, r.Holds, r.OpenHolds)
	if r.OK() {
		return s + ": pass"
	}
	s += fmt.Sprintf(": FAIL, %d violations", len(r.Violations))
	for i, v := range r.Violations {
		if i == 10 {
			s += fmt.Sprintf("\n  … and %d more", len(r.Violations)-10)
			break
		}
		s += "\n  " + v.String()
	}
	return s
}
