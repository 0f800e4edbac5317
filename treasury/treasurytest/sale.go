package treasurytest

import (
	"fmt"
	"sync"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/treasury"
)

// saleFixture adds EUR, the real money that comes into the ledger when a
// buyer pays, and bob's wallet in it under acme with 100 EUR paid in.
func saleFixture(t testing.TB, open Opener) *fixture {
	f := newFixture(t, open)
	require.NoError(t, f.l.CreateCurrency(f.ctx, currency.Currency{Code: "EUR", Scale: 2}))
	_, err := f.tr.Open(f.ctx, "root", "EUR", "acme", "", "open-acme-eur")
	require.NoError(t, err)
	_, err = f.tr.Open(f.ctx, "root", "EUR", "bob", "acme", "open-bob-eur")
	require.NoError(t, err)
	_, err = f.tr.Grant(f.ctx, "ops-ann", "EUR", "bob", dectest.D("100"), "paid-bob", "bank transfer 2026-11-24")
	require.NoError(t, err)
	return f
}

// testSale: a sale moves the amount and its cost, rounded up, in one
// action; a replay is that action, another sale under its key a
// conflict; a buyer who cannot pay keeps nothing of either leg, and the
// key goes through once he can.
func testSale(t *testing.T, open Opener) {
	f := saleFixture(t, open)
	proceeds := string(treasury.ProceedsID("CRED", "EUR"))
	assert.Equal(t, "wallet/EUR/sales:CRED", proceeds)

	_, err := f.tr.Sell(f.ctx, "ops-ann", "bob", "CRED", "EUR", dectest.D("10"), "s0")
	assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err), "no price set: %v", err)
	assert.ErrorContains(t, err, "bourse admin price set CRED EUR PRICE")

	t.Run("SetPrice", func(t *testing.T) {
		for _, c := range []struct {
			name, sold, paidIn, price, field string
			code                             bourse.Code
		}{
			{"Itself", "CRED", "CRED", "1", "paid_in", bourse.EInvalid},
			{"Negative", "CRED", "EUR", "-1", "price", bourse.EInvalid},
		} {
			_, err := f.tr.SetPrice(f.ctx, "ops-ann", currency.Code(c.sold), currency.Code(c.paidIn), dectest.D(c.price), "bad-"+c.name)
			var be *bourse.Error
			if assert.ErrorAs(t, err, &be, c.name) {
				assert.Equal(t, c.code, be.Code, "%s: %v", c.name, err)
				assert.Equal(t, c.field, be.Field, "%s: %v", c.name, err)
			}
		}
		_, err := f.tr.SetPrice(f.ctx, "ops-ann", "CRED", "USD", dectest.D("1"), "bad-currency")
		assert.Error(t, err, "no such currency")
	})

	_, err = f.tr.SetPrice(f.ctx, "ops-ann", "CRED", "EUR", dectest.D("0.333"), "p1")
	require.NoError(t, err)
	a, err := f.tr.Sell(f.ctx, "ops-bob", "bob", "CRED", "EUR", dectest.D("10.01"), "s1")
	require.NoError(t, err)
	assert.Equal(t, treasury.KindSale, a.Kind)
	assert.Equal(t, "bob", a.Target)
	assert.Equal(t, "0.333", a.After["price"])
	assert.Equal(t, "3.34", a.After["cost"], "10.01 × 0.333 = 3.33333, rounded up")
	assert.Equal(t, "100", a.Before["wallet/EUR/bob"])
	assert.Equal(t, "96.66", a.After["wallet/EUR/bob"])
	assert.Equal(t, "3.34", a.After[proceeds])
	assert.Equal(t, "10.01", a.After["wallet/CRED/bob"])
	assert.Equal(t, "-10.01", a.After["issuance/CRED"])
	bobCRED, err := f.l.Account(f.ctx, "wallet/CRED/bob")
	require.NoError(t, err)
	assert.Equal(t, currency.AccountID("wallet/CRED/acme"), bobCRED.Parent, "opened under the organisation of bob's wallet in EUR")
	supply, err := f.tr.Supply(f.ctx, "CRED", 0)
	require.NoError(t, err)
	require.Len(t, supply, 1)
	assert.Equal(t, "s1", supply[0].Key)
	assert.Equal(t, "10.01", supply[0].Change.String())
	assert.Equal(t, "sale at 0.333 EUR per CRED", supply[0].Memo)

	_, err = f.tr.SetPrice(f.ctx, "ops-ann", "CRED", "EUR", dectest.D("0.5"), "p2")
	require.NoError(t, err)
	again, err := f.tr.Sell(f.ctx, "ops-bob", "bob", "CRED", "EUR", dectest.D("10.010"), "s1")
	require.NoError(t, err, "the same sale again, after the price changed")
	assert.Equal(t, a, again, "a replay answers the first sale")
	assert.Equal(t, "10.01", f.balance("wallet/CRED/bob"), "minted once")
	assert.Equal(t, "96.66", f.balance("wallet/EUR/bob"), "paid once")
	_, err = f.tr.Sell(f.ctx, "ops-bob", "bob", "CRED", "EUR", dectest.D("11"), "s1")
	assert.Equal(t, bourse.EIdempotencyConflict, bourse.ErrorCode(err), "%v", err)

	for _, amount := range []string{"0", "-1", "0.001"} {
		_, err := f.tr.Sell(f.ctx, "ops-bob", "bob", "CRED", "EUR", dectest.D(amount), "bad-"+amount)
		var be *bourse.Error
		if assert.ErrorAs(t, err, &be, amount) {
			assert.Equal(t, bourse.EInvalid, be.Code, "%s: %v", amount, err)
			assert.Equal(t, "amount", be.Field, "%s: %v", amount, err)
		}
	}
	_, err = f.tr.Sell(f.ctx, "ops-bob", "nobody", "CRED", "EUR", dectest.D("1"), "s-nobody")
	assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err), "no wallet to pay from: %v", err)

	t.Run("BuyerCannotPay", func(t *testing.T) {
		// 1000 CRED at 0.5 is 500 EUR; bob has 96.66. The mint comes
		// first in the transaction, and goes with the payment.
		_, err := f.tr.Sell(f.ctx, "ops-bob", "bob", "CRED", "EUR", dectest.D("1000"), "s2")
		assert.Equal(t, bourse.EInsufficientFunds, bourse.ErrorCode(err), "%v", err)
		assert.Equal(t, "96.66", f.balance("wallet/EUR/bob"))
		assert.Equal(t, "3.34", f.balance(treasury.ProceedsID("CRED", "EUR")))
		assert.Equal(t, "10.01", f.balance("wallet/CRED/bob"), "nothing minted")
		assert.Equal(t, "-10.01", f.balance(currency.IssuanceID("CRED")))
		supply, err := f.tr.Supply(f.ctx, "CRED", 0)
		require.NoError(t, err)
		assert.Len(t, supply, 1, "no mint in the supply's history")
		acts, err := f.tr.Actions(f.ctx, "", 1)
		require.NoError(t, err)
		assert.Equal(t, "p2", acts[0].Key, "the refused sale left no action")
		f.audit()

		_, err = f.tr.Grant(f.ctx, "ops-ann", "EUR", "bob", dectest.D("500"), "paid-bob-2", "")
		require.NoError(t, err)
		a, err := f.tr.Sell(f.ctx, "ops-bob", "bob", "CRED", "EUR", dectest.D("1000"), "s2")
		require.NoError(t, err, "the refused key goes through once bob can pay")
		assert.Equal(t, "500", a.After["cost"])
		assert.Equal(t, "96.66", f.balance("wallet/EUR/bob"))
		assert.Equal(t, "503.34", f.balance(treasury.ProceedsID("CRED", "EUR")))
		assert.Equal(t, "1010.01", f.balance("wallet/CRED/bob"))
	})

	prices, err := f.tr.Prices(f.ctx)
	require.NoError(t, err)
	require.Len(t, prices, 1)
	assert.Equal(t, currency.Code("CRED"), prices[0].Sold)
	assert.Equal(t, currency.Code("EUR"), prices[0].PaidIn)
	assert.Equal(t, "0.5", prices[0].Price.String())
	assert.Equal(t, "ops-ann", prices[0].SetBy)
	assert.False(t, prices[0].SetAt.IsZero())
	rm, err := f.tr.SetPrice(f.ctx, "ops-ann", "CRED", "EUR", decimal.Zero, "p3")
	require.NoError(t, err)
	assert.Equal(t, "0.5", rm.Before["price"])
	prices, err = f.tr.Prices(f.ctx)
	require.NoError(t, err)
	assert.Empty(t, prices, "a zero price removes it")
	_, err = f.tr.Sell(f.ctx, "ops-bob", "bob", "CRED", "EUR", dectest.D("1"), "s3")
	assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err), "sales stopped: %v", err)
	f.audit()
}

// testSalesAtOnce: 16 sales of 1 to 16 CRED at 0.3 EUR to bob, who has
// 20 EUR of the 40.80 they would cost, at once, each twice under its
// key: he is never overdrawn, what was minted is what was paid over the
// price, each sale happened once, and the audit is clean.
func testSalesAtOnce(t *testing.T, open Opener) {
	f := saleFixture(t, open)
	_, err := f.tr.Burn(f.ctx, "ops-ann", "EUR", "bob", dectest.D("80"), "bob-to-20", "")
	require.NoError(t, err)
	_, err = f.tr.SetPrice(f.ctx, "ops-ann", "CRED", "EUR", dectest.D("0.3"), "p1")
	require.NoError(t, err)

	var (
		wg           sync.WaitGroup
		mu           sync.Mutex
		sold, paid   = decimal.Zero, decimal.Zero
		done, failed int
	)
	for i := 1; i <= 16; i++ {
		wg.Go(func() {
			key := fmt.Sprintf("sale-%d", i)
			a, err := f.tr.Sell(f.ctx, "ops", "bob", "CRED", "EUR", decimal.NewFromInt(int64(i)), key)
			again, err2 := f.tr.Sell(f.ctx, "ops", "bob", "CRED", "EUR", decimal.NewFromInt(int64(i)), key)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				assert.Equal(t, bourse.EInsufficientFunds, bourse.ErrorCode(err), "%s: %v", key, err)
				failed++
				if err2 == nil { // bob's money only goes down: what he could not pay he cannot pay later
					t.Errorf("%s refused and then done: %v", key, again)
				}
				return
			}
			assert.NoError(t, err2, key)
			assert.Equal(t, a, again, "%s: a replay is the sale", key)
			done++
			sold = sold.Add(decimal.NewFromInt(int64(i)))
			paid = paid.Add(dectest.D(a.After["cost"]))
		})
	}
	wg.Wait()
	require.Equal(t, 16, done+failed)
	assert.Positive(t, done)
	assert.Positive(t, failed, "bob cannot pay for them all")
	t.Logf("%d sales done, %d refused: %s CRED for %s EUR", done, failed, sold, paid)

	bobEUR := dectest.D(f.balance("wallet/EUR/bob"))
	assert.False(t, bobEUR.IsNegative(), "never overdrawn")
	assert.Equal(t, dectest.D("20").Sub(paid).String(), bobEUR.String())
	assert.Equal(t, paid.String(), f.balance(treasury.ProceedsID("CRED", "EUR")))
	assert.Equal(t, sold.String(), f.balance("wallet/CRED/bob"))
	assert.Equal(t, sold.Neg().String(), f.balance(currency.IssuanceID("CRED")), "the supply grew by what was sold")
	assert.True(t, sold.Equal(paid.Div(dectest.D("0.3"))), "minted %s, paid %s at 0.3", sold, paid)
	acts, err := f.tr.Actions(f.ctx, "", 100)
	require.NoError(t, err)
	var sales int
	for _, a := range acts {
		if a.Kind == treasury.KindSale {
			sales++
		}
	}
	assert.Equal(t, done, sales, "one action a sale done, none for a refused one")
	f.audit()
}
