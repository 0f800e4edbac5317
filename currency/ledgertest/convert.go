package ledgertest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/internal/dectest"
)

// cred is a second currency, of whole units, for exchanges.
const cred currency.Code = "CRED"

// testExchange converts GPU into CRED: both legs or neither, once per key,
// rounded down, and every currency still sums to zero.
func testExchange(t *testing.T, open Opener) {
	f := newFixture(t, open)
	require.NoError(t, f.l.CreateCurrency(f.ctx, currency.Currency{Code: cred, Scale: 0}))
	alice := f.wallet("alice")
	aliceCred, err := f.l.OpenAccount(f.ctx, currency.Account{ID: currency.WalletID(cred, "alice"), Currency: cred, Kind: currency.Wallet})
	require.NoError(t, err)
	f.mint("m1", alice, "100")

	x := currency.Convert{Key: "x1", From: alice, To: aliceCred.ID, Amount: dectest.D("10.33"), Rate: dectest.D("1.5"), Memo: "november"}
	r := f.ok(x)
	require.Len(t, r.Movements, 2)
	assert.Equal(t, "exchange at 1.5: november", r.Movements[0].Memo, "the rate is on the statement")
	assert.True(t, r.Movements[1].Amount.Equal(dectest.D("15")), "15.495 CRED rounds down to 15, got %s", r.Movements[1].Amount)
	f.balance(alice, "89.67", "0")
	f.balance(aliceCred.ID, "15", "0")
	f.balance(currency.IssuanceID(gpu), "-89.67", "0")
	f.balance(currency.IssuanceID(cred), "-15", "0")

	t.Run("Replay", func(t *testing.T) {
		again := f.ok(x)
		assert.Equal(t, r.Movements[1].ID, again.Movements[1].ID)
		f.balance(alice, "89.67", "0")
		f.balance(aliceCred.ID, "15", "0")
		other := x
		other.Rate = dectest.D("2")
		res := f.fails(other, bourse.EIdempotencyConflict)
		assert.Equal(t, "rate", res.Err.Field, "a different rate is a different exchange")
	})
	t.Run("NotEnough", func(t *testing.T) {
		f.fails(currency.Convert{Key: "x2", From: alice, To: aliceCred.ID, Amount: dectest.D("1000"), Rate: dectest.D("1.5")}, bourse.EInsufficientFunds)
		f.balance(alice, "89.67", "0")
		f.balance(aliceCred.ID, "15", "0")
	})
	t.Run("Invalid", func(t *testing.T) {
		bob := f.wallet("bob")
		for _, c := range []struct {
			name  string
			op    currency.Convert
			field string
		}{
			{"SameCurrency", currency.Convert{Key: "x3", From: alice, To: bob, Amount: dectest.D("1"), Rate: dectest.D("1")}, "to"},
			{"ZeroRate", currency.Convert{Key: "x4", From: alice, To: aliceCred.ID, Amount: dectest.D("1"), Rate: dectest.D("0")}, "rate"},
			{"RoundsToNothing", currency.Convert{Key: "x5", From: alice, To: aliceCred.ID, Amount: dectest.D("0.5"), Rate: dectest.D("1.5")}, "amount"},
			{"TooPrecise", currency.Convert{Key: "x6", From: alice, To: aliceCred.ID, Amount: dectest.D("0.001"), Rate: dectest.D("1000")}, "amount"},
			{"FromIssuance", currency.Convert{Key: "x7", From: currency.IssuanceID(gpu), To: aliceCred.ID, Amount: dectest.D("1"), Rate: dectest.D("1")}, "from"},
		} {
			t.Run(c.name, func(t *testing.T) {
				res := f.fails(c.op, bourse.EInvalid)
				assert.Equal(t, c.field, res.Err.Field, "%v", res.Err)
			})
		}
		f.balance(alice, "89.67", "0")
		f.balance(aliceCred.ID, "15", "0")
	})
	f.audit()
}
