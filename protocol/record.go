package protocol

import "github.com/bourse/bourse/contract"

// Record is how a server kept its word lately, as the exchange's store
// says: of the contracts it accepted in the last Window, how many it
// started, how many it never started (voided not_started: accepted, then
// neither run nor answered), and how many were settled as lost with it
// (server_lost). Demoted says the exchange routes it no offer but one
// that names it, and matches it no waiting offer, for it left more than
// half of its accepts unstarted (at least MinDemote of them).
type Record struct {
	Window     contract.Duration `json:"window"`
	Accepted   int               `json:"accepted"`
	Started    int               `json:"started"`
	NotStarted int               `json:"not_started"`
	Lost       int               `json:"lost"`
	Demoted    bool              `json:"demoted,omitempty"`
}

// MinDemote is the fewest contracts a server must have left unstarted in
// a record's window before it is demoted: one or two may be an outage.
const MinDemote = 3

// Demotes says whether the record demotes its server: at least
// MinDemote accepts never started, more than half of those accepted.
func (r Record) Demotes() bool {
	return r.NotStarted >= MinDemote && 2*r.NotStarted > r.Accepted
}
