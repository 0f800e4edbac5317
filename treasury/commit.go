package treasury

import (
	"context"
	"fmt"
	"maps"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/currency"
)

// What every Store's Commit does alike, exported for the stores in other packages.

// Begin is the action a change records, with Before and After copied so
// that the store can add to them.
func Begin(a Action) Action {
	a.Before, a.After = maps.Clone(a.Before), maps.Clone(a.After)
	if a.Before == nil {
		a.Before = map[string]string{}
	}
	if a.After == nil {
		a.After = map[string]string{}
	}
	return a
}

// Replay answers a change whose key is in the trail already: the stored
// action, unless the change asks something else.
func Replay(stored, asked Action) (Action, bool, error) {
	if stored.Request != asked.Request {
		return Action{}, false, &bourse.Error{Code: bourse.EIdempotencyConflict, Op: "treasury." + asked.Kind, Field: "key",
			Message: fmt.Sprintf("key %q was used by %s at %s for %q", asked.Key, stored.Actor, stored.At.Format("2006-01-02 15:04:05Z07:00"), stored.Request)}
	}
	return stored, false, nil
}

// NoteSetting puts a setting's old and new values in the action.
func NoteSetting(a Action, kind, old, new string) {
	if old != "" {
		a.Before[kind] = old
	}
	if new != "" {
		a.After[kind] = new
	}
}

// PageLimit bounds a listing's page.
func PageLimit(limit int) int {
	return currency.AccountQuery{Limit: limit}.PageLimit()
}

// Watch puts the balances of ids (their money not held), as the
// transaction sees them, in into; an account that does not exist is left
// out.
func Watch(ctx context.Context, tx currency.TxReader, ids []currency.AccountID, into map[string]string) error {
	for _, id := range ids {
		bal, found, err := tx.Balance(ctx, id)
		if err != nil {
			return err
		}
		if found {
			into[string(id)] = bal.String()
		}
	}
	return nil
}
