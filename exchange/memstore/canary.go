package memstore

import (
	"context"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/canary"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/protocol"
)

// PutCanary keeps r in place of any result kept before for its contract,
// which must be here and r.Server's.
func (s *Store) PutCanary(_ context.Context, r canary.Result) error {
	if err := r.Check(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.contracts[r.Contract]
	switch {
	case !ok:
		return currency.NotFound("memstore.PutCanary", "contract "+r.Contract)
	case c.Server != r.Server:
		return &bourse.Error{Code: bourse.EInvalid, Op: "memstore.PutCanary", Field: "server",
			Message: "contract " + r.Contract + " is " + c.Server + "'s, not " + r.Server + "'s"}
	}
	if s.canaries == nil {
		s.canaries = map[string]canary.Result{}
	}
	s.canaries[r.Contract] = r
	return nil
}

// Canaries counts the results judged at or after since by server, and
// the passes judged after each server's latest failure.
func (s *Store) Canaries(_ context.Context, since time.Time) (map[string]protocol.Canaries, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]protocol.Canaries{}
	failed := map[string]time.Time{} // each server's latest failure
	for _, r := range s.canaries {
		if r.At.Before(since) {
			continue
		}
		c := out[r.Server]
		c.Run++
		switch r.Verdict {
		case canary.Passed:
			c.Passed++
		case canary.Failed:
			c.Failed++
			if r.At.After(failed[r.Server]) {
				failed[r.Server] = r.At
			}
		default:
			c.Inconclusive++
		}
		if r.Conclusive() && worse(r.Deviation, c.Worst) {
			d := r.Deviation
			c.Worst = &d
		}
		out[r.Server] = c
	}
	for _, r := range s.canaries {
		if at, ok := failed[r.Server]; ok && r.Verdict == canary.Passed && r.At.After(at) {
			c := out[r.Server]
			c.PassedSince++
			out[r.Server] = c
		}
	}
	return out, nil
}

// worse says whether deviation d is worse than worst: larger in size, or
// as large and positive (an overcharge), as the SQL store chooses.
func worse(d decimal.Decimal, worst *decimal.Decimal) bool {
	if worst == nil {
		return true
	}
	if c := d.Abs().Cmp(worst.Abs()); c != 0 {
		return c > 0
	}
	return d.GreaterThan(*worst)
}
