// Package memstore keeps contracts in memory beside an in-memory ledger,
// for the demo and tests. One mutex makes each Open and Update atomic.
package memstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/canary"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/mem"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/protocol"
)

var _ exchange.Store = (*Store)(nil)

// Store is safe for concurrent use.
type Store struct {
	ledger *mem.Ledger

	mu        sync.Mutex
	contracts map[string]*contract.Contract
	byClient  map[string][]string // contract IDs in the order opened
	// live are the contracts that hold their escrow (accepted or
	// running), the only ones Stale and Stuck can list: a sweep looks at
	// these every second, not at every contract ever made.
	live map[string]*contract.Contract
	// forgotten are the ids of the contracts Forget dropped.
	forgotten *mem.Names
	// locks are the request ids locked by negotiations (lock.go);
	// locked counts the locks, to prune the ended ones now and then.
	locks  map[string]*lock
	locked int
	// book is the waiting offers (book.go).
	book map[string]*contract.Waiting
	// hearings are what each instance heard its servers say (Hear).
	hearings map[string]exchange.Hearing
	// canaries are the canary results kept, by contract (canary.go).
	canaries map[string]canary.Result
}

// New returns a store over l. It remembers the ids of the contracts it
// forgets as long as l remembers keys (mem.Options.Remember).
func New(l *mem.Ledger) *Store {
	return &Store{ledger: l, contracts: map[string]*contract.Contract{}, byClient: map[string][]string{}, live: map[string]*contract.Contract{},
		forgotten: mem.NewNames(l.Remember()), locks: map[string]*lock{}, book: map[string]*contract.Waiting{}}
}

func (s *Store) Ledger() currency.Ledger { return s.ledger }

func (s *Store) Open(ctx context.Context, c contract.Contract, lock string, reserves ...currency.Reserve) (contract.Contract, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.contracts[c.ID]; ok {
		delete(s.locks, c.ID)
		return old.Clone(), false, nil
	}
	if err := s.checkLock(c.ID, lock); err != nil {
		return contract.Contract{}, false, err
	}
	if s.forgotten.Has(0, c.ID) {
		return contract.Contract{}, false, &bourse.Error{Code: bourse.EConflict, Op: "memstore.Open", Field: "id",
			Message: "contract " + c.ID + " ended and was forgotten", Err: currency.ErrForgotten}
	}
	if err := s.unbook(c); err != nil {
		return contract.Contract{}, false, err
	}
	if len(reserves) == 1 {
		if _, err := currency.Do(ctx, s.ledger, reserves[0]); err != nil {
			return contract.Contract{}, false, err
		}
	} else {
		ops := make([]currency.Op, len(reserves))
		for i, r := range reserves {
			ops[i] = r
		}
		rs, err := s.ledger.ApplyAtomic(ctx, ops...)
		if err != nil {
			return contract.Contract{}, false, err
		}
		for _, r := range rs {
			if r.Err != nil {
				return contract.Contract{}, false, r.Err
			}
		}
	}
	cc := c.Clone()
	s.put(&cc)
	s.byClient[c.Client] = append(s.byClient[c.Client], c.ID)
	delete(s.locks, c.ID)
	delete(s.book, c.ID)
	return cc.Clone(), true, nil
}

// Contract returns contract id; one that Forget dropped is ENotFound
// wrapping currency.ErrForgotten.
func (s *Store) Contract(_ context.Context, id string) (contract.Contract, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.contracts[id]
	if !ok {
		return contract.Contract{}, s.notFound("memstore.Contract", id)
	}
	return c.Clone(), nil
}

func (s *Store) Contracts(_ context.Context, client string, limit int) ([]contract.Contract, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := s.byClient[client]
	var out []contract.Contract
	for i := len(ids) - 1; i >= 0 && (limit <= 0 || len(out) < limit); i-- {
		out = append(out, s.contracts[ids[i]].Clone())
	}
	return out, nil
}

// Update applies the ops through the in-memory ledger under the store's
// lock, all or none (mem.Ledger.ApplyAtomic): an op that fails leaves no
// trace, not even its failure under its key, as a SQL transaction that
// rolls back, so that the same change can succeed later.
func (s *Store) Update(ctx context.Context, id string, change func(c *contract.Contract) ([]currency.Op, error)) (contract.Contract, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.contracts[id]
	if !ok {
		return contract.Contract{}, s.notFound("memstore.Update", id)
	}
	next := cur.Clone()
	ops, err := change(&next)
	if err != nil {
		return cur.Clone(), err
	}
	if next.ID != id {
		return cur.Clone(), fmt.Errorf("memstore: change renamed contract %s to %s", id, next.ID)
	}
	if len(ops) > 0 {
		rs, err := s.ledger.ApplyAtomic(ctx, ops...)
		if err != nil {
			return cur.Clone(), err
		}
		for _, r := range rs {
			if r.Err != nil {
				return cur.Clone(), r.Err
			}
		}
	}
	s.put(&next)
	return next.Clone(), nil
}

// notFound is the error for a contract id not kept. s.mu is held.
func (s *Store) notFound(op, id string) error {
	if s.forgotten.Has(0, id) {
		return &bourse.Error{Code: bourse.ENotFound, Op: op, Message: "contract " + id + " ended and was forgotten", Err: currency.ErrForgotten}
	}
	return currency.NotFound(op, "contract "+id)
}

// Forget drops the contracts that ended (settled or voided, so that
// their escrow is resolved) before `before`, and their places in their
// clients' lists, so that the store keeps memory in proportion to the
// contracts that are live or ended recently. It returns how many it
// dropped. Contracts then lists only what is kept; Contract and Update of
// a dropped one are ENotFound, and Open of its id again EConflict (no
// second escrow under an old contract's id), both wrapping
// currency.ErrForgotten for as long as the ledger remembers keys
// (mem.Options.Remember), after which the id is unknown. Forget leaves
// the ledger alone: compact it with the same horizon
// (mem.Ledger.Compact). Canary results judged before before go too.
func (s *Store) Forget(before time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forgotten.Begin(before)
	for id, r := range s.canaries {
		if r.At.Before(before) {
			delete(s.canaries, id)
		}
	}
	clients := map[string]bool{}
	for id, c := range s.contracts {
		if !c.State.Ended() || !c.SettledAt.Before(before) {
			continue
		}
		delete(s.contracts, id)
		s.forgotten.Add(0, id)
		clients[c.Client] = true
	}
	n := 0
	for client := range clients {
		ids := s.byClient[client]
		var kept []string
		for _, id := range ids {
			if _, ok := s.contracts[id]; ok {
				kept = append(kept, id)
			}
		}
		n += len(ids) - len(kept)
		if len(kept) == 0 {
			delete(s.byClient, client)
		} else {
			s.byClient[client] = kept
		}
	}
	if n > len(s.contracts) {
		s.contracts = shrink(s.contracts)
		s.byClient = shrink(s.byClient)
	}
	return n
}

// shrink copies m into a map of its size (a map never shrinks).
func shrink[K comparable, V any](m map[K]V) map[K]V {
	out := make(map[K]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// put records c, and whether it is live. s.mu is held.
func (s *Store) put(c *contract.Contract) {
	s.contracts[c.ID] = c
	if c.HoldsEscrow() {
		s.live[c.ID] = c
	} else {
		delete(s.live, c.ID)
	}
}

func (s *Store) Stale(_ context.Context, now, silentSince time.Time, limit int) ([]contract.Contract, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []contract.Contract
	for _, c := range s.live {
		if c.Stuck != nil && c.Stuck.Retry.After(now) {
			continue
		}
		if c.Stale(now, silentSince) {
			out = append(out, c.Clone())
		}
	}
	slices.SortFunc(out, func(a, b contract.Contract) int {
		return cmp.Or(cmp.Compare(stuck(a), stuck(b)), a.AcceptedAt.Compare(b.AcceptedAt), strings.Compare(a.ID, b.ID))
	})
	return first(out, limit), nil
}

// stuck orders contracts never stuck before stuck ones.
func stuck(c contract.Contract) int {
	if c.Stuck != nil {
		return 1
	}
	return 0
}

func (s *Store) Stuck(_ context.Context, limit int) ([]contract.Contract, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []contract.Contract
	for _, c := range s.live {
		if c.Stuck != nil {
			out = append(out, c.Clone())
		}
	}
	slices.SortFunc(out, func(a, b contract.Contract) int {
		return cmp.Or(a.Stuck.Since.Compare(b.Stuck.Since), strings.Compare(a.ID, b.ID))
	})
	return first(out, limit), nil
}

// first returns the first limit contracts of cs; all if limit ≤ 0.
func first(cs []contract.Contract, limit int) []contract.Contract {
	if limit > 0 && len(cs) > limit {
		return cs[:limit]
	}
	return cs
}

// Between scans every contract: the in-memory store serves demos and
// tests, whose contracts are few.
func (s *Store) Between(_ context.Context, from, to time.Time, after string, limit int) ([]contract.Contract, error) {
	return s.between(from, to, after, limit, func(c *contract.Contract) (time.Time, bool) { return c.AcceptedAt, true }), nil
}

// Settled scans every contract, as Between does.
func (s *Store) Settled(_ context.Context, from, to time.Time, after string, limit int) ([]contract.Contract, error) {
	return s.between(from, to, after, limit, func(c *contract.Contract) (time.Time, bool) {
		return c.SettledAt, c.State == contract.StateSettled
	}), nil
}

// between lists the contracts whose time at says is in [from, to), by
// it then id, after the contract after, at most limit.
func (s *Store) between(from, to time.Time, after string, limit int, at func(c *contract.Contract) (time.Time, bool)) []contract.Contract {
	// Rows point at the contracts, and only the page's are copied: the
	// market data's tape reads the last seconds' settlements a page at a
	// time, and copying and sorting every one of them whole for each page
	// took a tenth of a busy exchange's CPU (BenchmarkOffers, 16 clients).
	type row struct {
		at time.Time
		c  *contract.Contract
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var all []row
	for _, c := range s.contracts {
		if t, ok := at(c); ok && !t.Before(from) && t.Before(to) {
			all = append(all, row{t, c})
		}
	}
	slices.SortFunc(all, func(a, b row) int { return cmp.Or(a.at.Compare(b.at), strings.Compare(a.c.ID, b.c.ID)) })
	if after != "" {
		i := slices.IndexFunc(all, func(r row) bool { return r.c.ID == after })
		if i < 0 {
			return []contract.Contract{} // the page ended on one no longer listed
		}
		all = all[i+1:]
	}
	if limit > 0 && len(all) > limit {
		all = all[:limit]
	}
	out := make([]contract.Contract, len(all))
	for i, r := range all {
		out[i] = r.c.Clone()
	}
	return out
}

// Hear keeps h in place of what its instance recorded before.
func (s *Store) Hear(_ context.Context, h exchange.Hearing) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hearings == nil {
		s.hearings = map[string]exchange.Hearing{}
	}
	s.hearings[h.Instance] = h
	return nil
}

// Heard lists the hearings recorded at or after since, by instance.
func (s *Store) Heard(_ context.Context, since time.Time) ([]exchange.Hearing, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []exchange.Hearing
	for _, h := range s.hearings {
		if !h.At.Before(since) {
			out = append(out, h)
		}
	}
	slices.SortFunc(out, func(a, b exchange.Hearing) int { return strings.Compare(a.Instance, b.Instance) })
	return out, nil
}

// Records counts the contracts accepted at or after since by server.
func (s *Store) Records(_ context.Context, since time.Time) (map[string]protocol.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]protocol.Record{}
	for _, c := range s.contracts {
		if c.AcceptedAt.Before(since) {
			continue
		}
		r := out[c.Server]
		r.Accepted++
		switch c.State {
		case contract.StateRunning, contract.StateSettled:
			r.Started++
		case contract.StateVoided:
			r.NotStarted++
		}
		if c.Reason == contract.ReasonServerLost {
			r.Lost++
		}
		out[c.Server] = r
	}
	return out, nil
}
