package trade

import (
	"time"

	"github.com/bourse/bourse/pricing"
)

// Counter is an offer a server would accept if made now, until ValidUntil.
type Counter struct {
	ID         string        `json:"id"`
	Server     string        `json:"server"`
	Terms      pricing.Terms `json:"terms"`
	ValidUntil time.Time     `json:"valid_until"`
	Note       string        `json:"note,omitempty"`
}
