package ledgertest

import (
	"time"

	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/internal/dectest"
)

// testUpTo: a transfer up to an amount takes what its source has of it,
// decided where it is applied, and its key keeps that answer: asked again
// after the source has spent or received more, it answers the same and
// moves nothing more. A source with nothing makes no movement, and no
// failure is kept under the key.
func testUpTo(t *testing.T, open Opener) {
	f := newFixture(t, open)
	alice, bob := f.wallet("alice"), f.wallet("bob")
	f.ok(currency.Transfer{Key: "mint", From: currency.IssuanceID(gpu), To: alice, Amount: dectest.D("5")})

	take := currency.Transfer{Key: "take", From: alice, To: bob, Amount: dectest.D("31.48"), UpTo: true}
	r := f.ok(take)
	require.Len(t, r.Movements, 1)
	assert.Equal(t, "5", r.Movements[0].Amount.String(), "what alice had")
	f.balance(alice, "0", "0")
	f.balance(bob, "5", "0")

	f.ok(currency.Transfer{Key: "mint-2", From: currency.IssuanceID(gpu), To: alice, Amount: dectest.D("50")})
	again := f.ok(take)
	require.Len(t, again.Movements, 1)
	assert.Equal(t, "5", again.Movements[0].Amount.String(), "a replay answers the first result")
	f.balance(alice, "50", "0")

	t.Run("AnotherKindOfTransfer", func(t *testing.T) {
		plain := take
		plain.UpTo = false
		f.fails(plain, bourse.EIdempotencyConflict)
	})
	t.Run("Empty", func(t *testing.T) {
		r := f.ok(currency.Transfer{Key: "take-empty", From: f.wallet("carol"), To: bob, Amount: dectest.D("1"), UpTo: true})
		assert.Empty(t, r.Movements, "nothing to take, nothing moved")
		r = f.ok(currency.Transfer{Key: "take-empty", From: f.wallet("carol"), To: bob, Amount: dectest.D("1"), UpTo: true})
		assert.Empty(t, r.Movements)
	})
	t.Run("FromIssuance", func(t *testing.T) {
		r := f.ok(currency.Transfer{Key: "mint-up-to", From: currency.IssuanceID(gpu), To: bob, Amount: dectest.D("7"), UpTo: true})
		require.Len(t, r.Movements, 1)
		assert.Equal(t, "7", r.Movements[0].Amount.String(), "issuance has no floor")
	})
	f.audit()
}

// testIfOpen: a capture or void if open resolves an open hold as a plain
// one does, and does nothing to a hold expired, resolved or never made,
// keeping that answer under its key.
func testIfOpen(t *testing.T, open Opener) {
	f := newFixture(t, open)
	alice, shop := f.wallet("alice"), f.revenue("shop")
	f.ok(currency.Transfer{Key: "mint", From: currency.IssuanceID(gpu), To: alice, Amount: dectest.D("30")})
	dl := f.clock.Now().Add(time.Hour)
	f.ok(currency.Reserve{Key: "r1", Hold: "h1", From: alice, Amount: dectest.D("10"), Deadline: dl})
	f.ok(currency.Reserve{Key: "r2", Hold: "h2", From: alice, Amount: dectest.D("10"), Deadline: dl})
	f.balance(alice, "10", "20")

	r := f.ok(currency.Capture{Key: "c1", Hold: "h1", To: shop, Amount: dectest.D("4"), IfOpen: true})
	assert.Len(t, r.Movements, 2, "an open hold is captured: 4 to the shop, 6 back")
	f.balance(alice, "16", "10")

	f.clock.Advance(2 * time.Hour)
	f.ok(currency.Expire{Key: "x2", Hold: "h2"})
	f.balance(alice, "26", "0")
	r = f.ok(currency.Void{Key: "v2", Hold: "h2", IfOpen: true})
	assert.Empty(t, r.Movements, "an expired hold: nothing to do")
	f.fails(currency.Void{Key: "v2-plain", Hold: "h2"}, bourse.EHoldResolved)
	r = f.ok(currency.Capture{Key: "c1-again", Hold: "h1", To: shop, Amount: dectest.D("4"), IfOpen: true})
	assert.Empty(t, r.Movements, "a captured hold: nothing to do")
	r = f.ok(currency.Void{Key: "v-none", Hold: "never", IfOpen: true})
	assert.Empty(t, r.Movements, "no such hold: nothing to do")
	f.fails(currency.Void{Key: "v2", Hold: "h2"}, bourse.EIdempotencyConflict)
	f.balance(alice, "26", "0")
	f.audit()
}
