package protocol

import (
	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/contract"
)

// Record is how a server kept its word lately, as the exchange's store
// says: of the contracts it accepted in the last Window, how many it
// started, how many it never started (voided not_started: accepted, then
// neither run nor answered), and how many were settled as lost with it
// (server_lost); and its canary audits (Canaries). Demoted says the
// exchange routes it no offer but one that names it, and matches it no
// waiting offer, for it left more than half of its accepts unstarted (at
// least MinDemote of them), or its canaries demote it.
type Record struct {
	Window     contract.Duration `json:"window"`
	Accepted   int               `json:"accepted"`
	Started    int               `json:"started"`
	NotStarted int               `json:"not_started"`
	Lost       int               `json:"lost"`
	// Canaries are its canary audits judged in their own window; nil
	// where none was.
	Canaries *Canaries `json:"canaries,omitempty"`
	Demoted  bool      `json:"demoted,omitempty"`
}

// MinDemote is the fewest contracts a server must have left unstarted in
// a record's window before it is demoted: one or two may be an outage.
const MinDemote = 3

// Demotes says whether the record demotes its server: at least
// MinDemote accepts never started, more than half of those accepted; or
// canaries that demote it (Canaries.Demotes).
func (r Record) Demotes() bool {
	return r.NotStarted >= MinDemote && 2*r.NotStarted > r.Accepted || r.Canaries.Demotes()
}

// Canaries are a server's canary audits judged in the last Window (a
// week by default): jobs of known GPU use that the market ran on it as an
// ordinary client, each judged on the usage its contract settled on
// (package canary). Run counts them all: Passed settled on the truth
// within its tolerance, Failed did not (the meter said more or less than
// the job used), Inconclusive were voided, lost, or not settled in time,
// and say nothing of the meter. PassedSince counts the passes judged
// after the latest failure (0 where none failed). Worst is the deviation
// of U from the truth, (U − truth) / truth, of the largest size among the
// conclusive ones: positive where the meter said more than the job used;
// absent where none was conclusive.
type Canaries struct {
	Window       contract.Duration `json:"window"`
	Run          int               `json:"run"`
	Passed       int               `json:"passed"`
	Failed       int               `json:"failed"`
	Inconclusive int               `json:"inconclusive"`
	PassedSince  int               `json:"passed_since_failure,omitempty"`
	Worst        *decimal.Decimal  `json:"worst_deviation,omitempty"`
}

// CanaryRestore is how many canaries a server must pass after its latest
// failed one to be restored.
const CanaryRestore = 2

// Demotes says whether the canaries demote their server: one failed in
// the window, and fewer than CanaryRestore passed after the latest
// failure. Passes judged before a failure do not outweigh it, so a
// server cannot bank honest canaries and then lie, nor lie at a share of
// its jobs and stay in good standing: each failure demotes it until two
// later canaries pass. A meter that lies at every job stays demoted; an
// honest meter's rare miss (a tolerance too tight for a real GPU's
// noise) costs it until two more pass; an inconclusive canary counts for
// neither side. nil demotes no one.
func (c *Canaries) Demotes() bool {
	return c != nil && c.Failed > 0 && c.PassedSince < CanaryRestore
}
