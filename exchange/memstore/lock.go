package memstore

import (
	"context"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/exchange"
)

// lock is a request id's lock: the negotiation holding it, if any, and
// the last one that ended without a contract.
type lock struct {
	holder  string
	until   time.Time
	ended   string
	endedAt time.Time
	// outcome is the ended negotiation's answer, encoded (into encoded)
	// only when a later try reads it: most offers that make no contract
	// are never tried again.
	outcome func() []byte
	encoded []byte
}

// read is the ended negotiation's answer, encoded once.
func (cl *lock) read() []byte {
	if cl.encoded == nil && cl.outcome != nil {
		cl.encoded, cl.outcome = cl.outcome(), nil
	}
	return cl.encoded
}

// keepEnded is how long the outcome of a negotiation that made no
// contract is kept for the later tries of its request id.
const keepEnded = time.Minute

// LockFunds is Lock, then the ledger's Balances: no round trips to save
// in memory.
func (s *Store) LockFunds(ctx context.Context, c exchange.Lock, now time.Time, accounts ...currency.AccountID) (exchange.Locked, []currency.Balance, error) {
	got, err := s.Lock(ctx, c, now)
	if err != nil {
		return exchange.Locked{}, nil, err
	}
	bals, err := s.ledger.Balances(ctx, accounts...)
	if err != nil {
		return exchange.Locked{}, nil, err
	}
	return got, bals, nil
}

func (s *Store) Lock(_ context.Context, c exchange.Lock, now time.Time) (exchange.Locked, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.locked++; s.locked%1024 == 0 {
		for id, cl := range s.locks {
			if cl.holder == "" && now.Sub(cl.endedAt) > keepEnded {
				delete(s.locks, id)
			}
		}
	}
	cl := s.locks[c.ID]
	if cl == nil {
		cl = &lock{}
		s.locks[c.ID] = cl
	}
	if cl.holder == "" && cl.ended != "" && now.Sub(cl.endedAt) > keepEnded {
		cl.ended, cl.outcome, cl.encoded = "", nil, nil
	}
	if cl.holder != "" && cl.holder != c.Token && cl.until.After(now) {
		return exchange.Locked{Holder: cl.holder, Until: cl.until, Ended: cl.ended, Outcome: cl.read()}, nil
	}
	cl.holder, cl.until = c.Token, c.Until
	return exchange.Locked{Mine: true, Ended: cl.ended, Outcome: cl.read()}, nil
}

func (s *Store) Finish(_ context.Context, c exchange.Lock, outcome func() []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cl := s.locks[c.ID]; cl != nil && cl.holder == c.Token {
		// The store has no clock: the lock's Until stands for when it ended.
		cl.holder, cl.ended, cl.outcome, cl.encoded, cl.endedAt = "", c.Token, outcome, nil, cl.until
	}
	return nil
}

// checkLock says whether token may open contract id: with no token,
// always; else only while it holds the id's lock. The caller holds s.mu.
func (s *Store) checkLock(id, token string) error {
	if token == "" {
		return nil
	}
	if cl := s.locks[id]; cl == nil || cl.holder != token {
		return &bourse.Error{Code: bourse.EUnavailable, Op: "memstore.Open", Field: "request_id",
			Message: "another try of this request took over its negotiation; retry with the same request id for its answer"}
	}
	return nil
}
