package currency

import (
	"errors"
	"fmt"

	"github.com/bourse/bourse"
)

// Hooks for backends that compact their books (currency/mem's Compact):
// they forget what old, finished operations did and keep only its sum.

// CarriedForward is the Movement of the first line of a statement whose
// older entries were compacted: an opening balance whose Amount and
// Balance are what those entries added up to, with the Seq of the last of
// them, so that the running balances that follow still start from zero.
const CarriedForward = "carried-forward"

// ForgottenFingerprint is the fingerprint that Books.Result returns for a
// key whose result was compacted away but which the backend still
// recognises. Apply then refuses the operation with ErrForgotten instead
// of applying it a second time: its first answer cannot be given again.
const ForgottenFingerprint = "forgotten"

// ErrForgotten is wrapped by the errors about keys, holds and records that
// a backend compacted away: the thing existed and ended, and only a
// fingerprint of its name is left.
var ErrForgotten = errors.New("compacted away")

// forgottenKey is the failure of an operation under a key that was
// compacted: an EIdempotencyConflict, since the key was used before.
func forgottenKey(name, key string) *bourse.Error {
	return &bourse.Error{Code: bourse.EIdempotencyConflict, Op: "currency." + name, Field: "key",
		Message: fmt.Sprintf("key %q was used before and its result compacted; use a new key for a new operation", key),
		Err:     ErrForgotten}
}
