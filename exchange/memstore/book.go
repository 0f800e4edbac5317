package memstore

import (
	"context"
	"slices"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/exchange"
)

func (s *Store) Queue(_ context.Context, w contract.Waiting, lock string, limits exchange.BookLimits) (exchange.Queued, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.book[w.ID]; ok {
		return exchange.Queued{Waiting: s.ahead(*old)}, nil
	}
	if err := s.checkLock(w.ID, lock); err != nil {
		return exchange.Queued{}, err
	}
	if _, ok := s.contracts[w.ID]; ok || s.forgotten.Has(0, w.ID) {
		return exchange.Queued{}, exchange.ContractExists(w.ID)
	}
	mine := 0
	var last *contract.Waiting
	for _, o := range s.book {
		if o.Client == w.Client {
			mine++
		}
		if o.Terms.Currency == w.Terms.Currency && (last == nil || exchange.BookOrder(*o, *last) > 0) {
			last = o
		}
	}
	outbid, err := exchange.CheckBookLimits(limits, mine, len(s.book), w, last)
	if err != nil {
		return exchange.Queued{}, err
	}
	q := exchange.Queued{Created: true}
	if outbid {
		gone := *last
		delete(s.book, gone.ID)
		q.Outbid = &gone
	}
	w.Ahead, w.Left = 0, ""
	s.book[w.ID] = &w
	q.Waiting = s.ahead(w)
	return q, nil
}

func (s *Store) Waiting(_ context.Context, id string) (contract.Waiting, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.book[id]
	if !ok {
		return contract.Waiting{}, currency.NotFound("memstore.Waiting", "waiting offer "+id)
	}
	return s.ahead(*w), nil
}

// ahead is w with Ahead counted. s.mu is held.
func (s *Store) ahead(w contract.Waiting) contract.Waiting {
	w.Ahead = 0
	for _, o := range s.book {
		if o.Terms.Currency == w.Terms.Currency && exchange.BookOrder(*o, w) < 0 {
			w.Ahead++
		}
	}
	return w
}

func (s *Store) Book(_ context.Context, q exchange.BookQuery) ([]contract.Waiting, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []contract.Waiting{}
	for _, w := range s.book {
		if (q.Currency == "" || w.Terms.Currency == q.Currency) && (q.Client == "" || w.Client == q.Client) &&
			(q.DueBy.IsZero() || !w.Until.After(q.DueBy)) && (q.After == nil || exchange.BookOrder(*w, *q.After) > 0) {
			out = append(out, *w)
		}
	}
	slices.SortFunc(out, exchange.BookOrder)
	if q.Limit > 0 && len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out, nil
}

func (s *Store) Unqueue(_ context.Context, id string) (contract.Waiting, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.book[id]
	if !ok {
		return contract.Waiting{}, currency.NotFound("memstore.Unqueue", "waiting offer "+id)
	}
	delete(s.book, id)
	return *w, nil
}

// unbook takes c's waiting offer out of the book as Open makes c: one
// made from the book must find it there. s.mu is held.
func (s *Store) unbook(c contract.Contract) error {
	if _, ok := s.book[c.ID]; !ok && !c.QueuedAt.IsZero() {
		return &bourse.Error{Code: bourse.EConflict, Op: "memstore.Open", Field: "id", Message: exchange.LeftMeanwhile(c.ID)}
	}
	return nil
}
