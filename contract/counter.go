package contract

import (
	"time"
)

// Counter is an offer a server would accept if made now, until ValidUntil.
type Counter struct {
	ID         string    `json:"id"`
	Server     string    `json:"server"`
	Terms      Terms     `json:"terms"`
	ValidUntil time.Time `json:"valid_until"`
	Note       string    `json:"note,omitempty"`
}
