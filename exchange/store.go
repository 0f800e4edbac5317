package exchange

import (
	"context"
	"errors"
	"time"

	"github.com/bourse/bourse/canary"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/protocol"
)

// Store keeps contracts with the ledger, so that a contract's change of
// state and the money it moves commit together. Implementations:
// exchange/memstore (demo, tests) and exchange/sqlstore (PostgreSQL and
// CockroachDB).
type Store interface {
	// Ledger is the ledger the store writes to, for reads and set-up.
	Ledger() currency.Ledger
	// Open escrows the prepayment (the first reserve; the others, a
	// client's caps) and records c, atomically. If a contract with c.ID
	// exists it is returned with created=false and nothing is written. If
	// a reserve fails its error is returned, no contract is recorded and
	// none of the reserves is kept. With a lock token (see Lock), the
	// id must be locked by that token, or Open makes nothing and fails
	// with EUnavailable (another try took the lock over); the contract,
	// made or found, ends the lock. The contract made takes its id's
	// waiting offer out of the book, if there is one, in the same
	// transaction; one made from the book (c.QueuedAt set) is made only
	// if its waiting offer is still there, else Open fails with
	// EConflict (it was cancelled or expired meanwhile).
	Open(ctx context.Context, c contract.Contract, lock string, reserves ...currency.Reserve) (stored contract.Contract, created bool, err error)
	// Queue puts w in the book, unless it is there already (it returns
	// the one stored, Created false) or a contract of w.ID exists
	// (EConflict). With a lock token the id must be locked by it, as
	// for Open. It writes nothing and fails with EBookFull where
	// w.Client has limits.PerClient waiting offers, or where the book
	// holds limits.Total in all and w does not outbid the last waiting
	// offer of its currency in book order (Outbids); if it does, that
	// offer leaves the book in the same transaction and is returned as
	// Outbid.
	Queue(ctx context.Context, w contract.Waiting, lock string, limits BookLimits) (Queued, error)
	// Waiting is waiting offer id with its Ahead counted; ENotFound if it
	// is not in the book.
	Waiting(ctx context.Context, id string) (contract.Waiting, error)
	// Book lists the waiting offers q selects in book order: the highest
	// Price first, then the earliest QueuedAt, then by id. Ahead is not
	// set.
	Book(ctx context.Context, q BookQuery) ([]contract.Waiting, error)
	// Unqueue takes waiting offer id out of the book and returns it as it
	// was; ENotFound if it is not there (matched, cancelled or expired
	// already): of calls that race, one finds it.
	Unqueue(ctx context.Context, id string) (contract.Waiting, error)
	// Lock locks c.ID for negotiation c.Token until c.Until, unless
	// another negotiation holds it and its Until is after now; it says
	// which. A lock taken over leaves the other negotiation unable to
	// Open. A contract made under the id needs no lock: Open ends it.
	Lock(ctx context.Context, c Lock, now time.Time) (Locked, error)
	// LockFunds is Lock with the balances of accounts read as
	// Ledger().Balances reads them (a zero Balance for an account that
	// does not exist), whatever the lock: on a database in one round
	// trip, where the two were an offer's only ones before it
	// negotiates. The balances are a cheap early no; the escrow's
	// reserve is the binding check.
	LockFunds(ctx context.Context, c Lock, now time.Time, accounts ...currency.AccountID) (Locked, []currency.Balance, error)
	// Finish records that negotiation c ended without a contract,
	// answering outcome(), and frees the id, if c still holds it; the
	// later tries of the id read that answer (Locked.Ended, Outcome)
	// for a minute. A store may call outcome only when one does (most
	// offers that make no contract are never tried again): the House
	// does not change a reply once answered.
	Finish(ctx context.Context, c Lock, outcome func() []byte) error
	Contract(ctx context.Context, id string) (contract.Contract, error)
	// Contracts lists a client's contracts, newest first.
	Contracts(ctx context.Context, client string, limit int) ([]contract.Contract, error)
	// Settled lists up to limit contracts (all if limit ≤ 0) of every
	// client settled (StateSettled, not voided) in [from, to), the
	// earliest settled first (ties by ID), starting after the contract
	// with ID after if given: for market data, a page at a time.
	Settled(ctx context.Context, from, to time.Time, after string, limit int) ([]contract.Contract, error)
	// Between lists up to limit contracts (all if limit ≤ 0) of every
	// client accepted in [from, to), the earliest first (ties by ID),
	// starting after the contract with ID after if given: for reports,
	// a page at a time.
	Between(ctx context.Context, from, to time.Time, after string, limit int) ([]contract.Contract, error)
	// Update locks contract id and calls change with a copy of it. If change
	// returns nil, the changed contract is written and the ledger ops are
	// applied in the same transaction; an op that fails aborts both and its
	// error is returned. If change returns an error, nothing is written and
	// Update returns the stored contract with that error (ErrNoChange for
	// "nothing to do"). change runs inside the store's transaction, and
	// may run more than once (retries, or a run on a copy the store kept
	// that turns out stale): it must do no I/O and have no effect outside
	// c, and the last run's result is the one that counts.
	Update(ctx context.Context, id string, change func(c *contract.Contract) ([]currency.Op, error)) (contract.Contract, error)
	// Stale lists up to limit contracts the sweep must look at: running
	// ones last seen before silentSince or whose Stop.By is not after now,
	// and accepted ones whose start deadline is before now; but none whose
	// Stuck.Retry is after now. The
	// contracts never stuck come first, then the stuck ones, each the
	// earliest accepted first, so that contracts that keep failing never
	// hide the others.
	Stale(ctx context.Context, now, silentSince time.Time, limit int) ([]contract.Contract, error)
	// Stuck lists up to limit contracts that still hold their escrow and
	// have failed to settle or void (Stuck set), the longest stuck first.
	Stuck(ctx context.Context, limit int) ([]contract.Contract, error)
	// Hear records what instance h.Instance heard its servers say, in
	// place of what it recorded before (hearing.go). Heard lists the
	// records of every instance made at or after since.
	Hear(ctx context.Context, h Hearing) error
	Heard(ctx context.Context, since time.Time) ([]Hearing, error)
	// Records counts, by server, the contracts accepted at or after
	// since: all of them (Accepted), those that started (running or
	// settled: Started), those voided without starting (NotStarted) and
	// those settled as lost (Lost). Window and Demoted are the caller's.
	Records(ctx context.Context, since time.Time) (map[string]protocol.Record, error)
	// PutCanary keeps canary result r (package canary) of contract
	// r.Contract, in place of any kept before for that contract: the
	// latest judgment of a contract counts. The contract must be in the
	// store (ENotFound) and be r.Server's (EInvalid). No party on the
	// wire writes one: the canary runner does, on the database (record.go).
	PutCanary(ctx context.Context, r canary.Result) error
	// Canaries counts, by server, the canary results judged (At) at or
	// after since: all of them (Run), passed, failed and inconclusive,
	// the passes judged after the server's latest failure (PassedSince),
	// and the deviation of the largest size among the conclusive ones
	// (Worst). Window is the caller's.
	Canaries(ctx context.Context, since time.Time) (map[string]protocol.Canaries, error)
}

// Hearing is what one exchange instance heard its servers say, as of At:
// each server heard within ServerLostAfter, and the contracts its last
// heartbeat listed as running or settling.
type Hearing struct {
	Instance string
	At       time.Time
	Servers  map[string][]string
}

// ErrNoChange is returned by an Update change function that finds nothing
// to do (a stale reading, a contract settled already).
var ErrNoChange = errors.New("no change")

// BookLimits bound the book: waiting offers of one client, and in all.
type BookLimits struct {
	PerClient int
	Total     int
}

// Queued is what Store.Queue did: the waiting offer as stored, whether
// this call put it there, and the waiting offer it outbid out of a full
// book, if it did.
type Queued struct {
	Waiting contract.Waiting
	Created bool
	Outbid  *contract.Waiting
}

// BookQuery selects waiting offers: of Currency and of Client where set,
// whose Until is not after DueBy where set, after the waiting offer After
// in book order where set (its Price, QueuedAt and ID: a page's last, for
// the next page), at most Limit (all if ≤ 0).
type BookQuery struct {
	Currency string
	Client   string
	DueBy    time.Time
	After    *contract.Waiting
	Limit    int
}
