// Package treasury is the administrators' side of the money: every
// administrative action (a grant, a burn, an allowance, a cap, a rate, an
// exchange between currencies, a price, a sale) goes through it, so that
// each is applied once under its idempotency key and leaves its line in
// the audit trail: who, when, what, the key, and the balances or settings
// before and after.
// The ledger operations of an action, its change of settings and its line
// in the trail commit together (one SQL transaction; the in-memory store
// holds a lock and applies the operations atomically): there is no money
// moved by an administrator that the trail does not show.
//
// The console and `bourse admin` only call the Treasury.
package treasury

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/bourse/bourse/currency"
)

// Action is one line of the audit trail.
type Action struct {
	Key    string    `json:"key"`
	At     time.Time `json:"at"`
	Actor  string    `json:"actor"`
	Kind   string    `json:"kind"`
	Target string    `json:"target"`
	Memo   string    `json:"memo,omitempty"`
	// Before and After are what the action changed, as text: the balances
	// of the accounts it moved money between ("wallet/GPU/alice" →
	// "100.00") and the setting it changed ("allowance" → its rule).
	Before map[string]string `json:"before,omitempty"`
	After  map[string]string `json:"after,omitempty"`
	// Request is what was asked, canonically: a second action under the
	// same key must ask the same, or it is an idempotency conflict.
	Request string `json:"request"`
}

// Kinds of action.
const (
	KindCurrency        = "currency"
	KindOpen            = "open"
	KindGrant           = "grant"
	KindBurn            = "burn"
	KindAllowanceSet    = "allowance.set"
	KindAllowanceRemove = "allowance.remove"
	KindAllowance       = "allowance"
	KindCapSet          = "cap.set"
	KindSpendCapSet     = "spend-cap.set"
	KindSpendRateSet    = "spend-rate.set"
	KindSpendRateRefill = "spend-rate.refill"
	KindTopUpSet        = "topup.set"
	KindTopUp           = "topup"
	KindRateSet         = "rate.set"
	KindExchange        = "exchange"
	KindPriceSet        = "price.set"
	KindSale            = "sale"
	KindContractCancel  = "contract.cancel"
)

// Setting is one of the treasury's own records beside the ledger: an
// allowance's rule (Kind "allowance", Name the wallet), a rate (Kind
// "rate", Name "FROM/TO") or a price (Kind "price", Name "SOLD/PAIDIN").
// An empty Value removes it.
type Setting struct {
	Kind  string    `json:"kind"`
	Name  string    `json:"name"`
	Value string    `json:"value"`
	SetBy string    `json:"set_by"`
	SetAt time.Time `json:"set_at"`
	// Version counts the writes of the setting, removals included, from
	// 1; a store sets it. It never goes back, so that what is keyed by it
	// (an allowance's payments) is never taken for another version's.
	Version int64 `json:"version"`
}

// Change is what one action does: Ops on the ledger (all or none), an
// optional Setting, and the line for the trail. Watch names the accounts
// whose balances go in the line's Before and After.
type Change struct {
	Action  Action
	Ops     []currency.Op
	Watch   []currency.AccountID
	Setting *Setting
	// Plan, where set, decides the change inside the store's transaction,
	// before anything is written: from the balances and settings it reads
	// through v, which nothing else can change before the commit, it sets
	// c.Ops and c.Setting and may note what it decided in c.Action's
	// Before and After. It runs only when the key is new, and again from
	// the Change as given if the transaction is retried. ErrNoChange
	// commits nothing, not even the action; any other error fails the
	// commit.
	Plan func(ctx context.Context, v View, c *Change) error
	// Unrecorded commits the change without a line in the trail: for a
	// scheduled payment whose rule is in the trail already, and whose
	// operations' keys make it idempotent by themselves (an allowance's
	// periods, one an hour per wallet, would otherwise bury the
	// administrators' actions). Its Action names it for errors only.
	Unrecorded bool
}

// View is what a Plan reads, in the transaction that commits its change.
type View interface {
	currency.TxReader
	// Setting is the setting of kind and name; found is false where there
	// is none, or it was removed (its Version still counts the writes).
	Setting(ctx context.Context, kind, name string) (s Setting, found bool, err error)
	// Now is the store's clock, the one the trail's times are read on.
	Now() time.Time
}

// ErrNoChange is a Plan's answer when nothing is due: the commit records
// nothing and returns it.
var ErrNoChange = errors.New("treasury: nothing to change")

// Store keeps the trail and the settings beside a ledger. Implementations:
// Mem (here) and treasury/sqltreasury; both pass treasury/treasurytest.
type Store interface {
	Ledger() currency.Ledger
	// Commit applies a change once per Action.Key. If an action with the
	// key is in the trail already it is returned with fresh false and
	// nothing is done (an EIdempotencyConflict if it asked something
	// else). An Unrecorded change is applied without the trail, its
	// operations' keys answering for its repetitions. If an op fails for a business reason its error is returned
	// and nothing of the change is kept, not even the failure under the
	// op's key. Commit sets the action's At, Before and After.
	Commit(ctx context.Context, c Change) (a Action, fresh bool, err error)
	// Actions lists up to limit actions of the trail, newest first, from
	// before the action with key before (from the newest if empty).
	Actions(ctx context.Context, before string, limit int) ([]Action, error)
	// Settings lists the settings of a kind, by name.
	Settings(ctx context.Context, kind string) ([]Setting, error)
	// Now is the store's clock, the trail's.
	Now() time.Time
}

// Changes says what the action changed, one field at a time, by name:
// "wallet/CRED/alice: 100 → 80; rate: 0.5" (a field only after is new,
// one only before is gone: "none").
func (a Action) Changes() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(union(a.Before, a.After))) {
		b, okb := a.Before[k]
		n, okn := a.After[k]
		switch {
		case okb && okn && b == n:
		case !okb:
			parts = append(parts, k+": "+n)
		case !okn:
			parts = append(parts, k+": "+b+" → none")
		default:
			parts = append(parts, k+": "+b+" → "+n)
		}
	}
	return strings.Join(parts, "; ")
}

func union(a, b map[string]string) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}
