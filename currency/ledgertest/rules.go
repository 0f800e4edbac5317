package ledgertest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/internal/dectest"
)

func testCurrencies(t *testing.T, open Opener) {
	f := newFixture(t, open)
	c, err := f.l.Currency(f.ctx, gpu)
	require.NoError(t, err)
	assert.Equal(t, currency.Currency{Code: gpu, Scale: 2}, c)

	t.Run("CreateAgain", func(t *testing.T) {
		require.NoError(t, f.l.CreateCurrency(f.ctx, currency.Currency{Code: gpu, Scale: 2}))
	})
	t.Run("EConflict", func(t *testing.T) {
		err := f.l.CreateCurrency(f.ctx, currency.Currency{Code: gpu, Scale: 4})
		assert.Equal(t, bourse.EConflict, bourse.ErrorCode(err), "%v", err)
	})
	t.Run("EInvalid", func(t *testing.T) {
		for _, c := range []currency.Currency{{Code: "", Scale: 2}, {Code: "gpu", Scale: 2}, {Code: "X Y", Scale: 2}, {Code: "OK", Scale: -1}, {Code: "OK", Scale: 19}} {
			err := f.l.CreateCurrency(f.ctx, c)
			assert.Equal(t, bourse.EInvalid, bourse.ErrorCode(err), "%+v: %v", c, err)
		}
	})
	t.Run("EUnknownCurrency", func(t *testing.T) {
		_, err := f.l.Currency(f.ctx, "NOPE")
		assert.Equal(t, bourse.EUnknownCurrency, bourse.ErrorCode(err), "%v", err)
	})
	t.Run("IssuanceAccount", func(t *testing.T) {
		a, err := f.l.Account(f.ctx, currency.IssuanceID(gpu))
		require.NoError(t, err)
		assert.Equal(t, currency.Issuance, a.Kind)
		f.balance(a.ID, "0", "0")
	})
}

func testAccounts(t *testing.T, open Opener) {
	f := newFixture(t, open)
	org := f.wallet("acme")
	proj := currency.Account{ID: currency.WalletID(gpu, "acme.vision"), Currency: gpu, Kind: currency.Wallet, Parent: org}
	a, err := f.l.OpenAccount(f.ctx, proj)
	require.NoError(t, err)
	assert.Equal(t, org, a.Parent)
	assert.Equal(t, f.clock.Now(), a.Created.UTC())

	t.Run("OpenAgain", func(t *testing.T) {
		f.clock.Advance(time.Minute)
		b, err := f.l.OpenAccount(f.ctx, proj)
		require.NoError(t, err)
		assert.Equal(t, a.Created.UTC(), b.Created.UTC(), "reopening returns the first account")
	})
	t.Run("Lookup", func(t *testing.T) {
		b, err := f.l.Account(f.ctx, proj.ID)
		require.NoError(t, err)
		assert.Equal(t, proj.ID, b.ID)
		assert.Equal(t, currency.Wallet, b.Kind)
		assert.Equal(t, org, b.Parent)
	})
	bad := []struct {
		name string
		acc  currency.Account
		code bourse.Code
	}{
		{"EConflict", currency.Account{ID: proj.ID, Currency: gpu, Kind: currency.Revenue}, bourse.EConflict},
		{"EUnknownCurrency", currency.Account{ID: "wallet/NOPE/x", Currency: "NOPE", Kind: currency.Wallet}, bourse.EUnknownCurrency},
		{"IssuanceRefused", currency.Account{ID: "issuance/x", Currency: gpu, Kind: currency.Issuance}, bourse.EInvalid},
		{"EscrowRefused", currency.Account{ID: "escrow/x", Currency: gpu, Kind: currency.Escrow}, bourse.EInvalid},
		{"UnknownKind", currency.Account{ID: "x", Currency: gpu, Kind: "piggybank"}, bourse.EInvalid},
		{"EmptyID", currency.Account{Currency: gpu, Kind: currency.Wallet}, bourse.EInvalid},
		{"SpaceInID", currency.Account{ID: "wallet/GPU/a b", Currency: gpu, Kind: currency.Wallet}, bourse.EInvalid},
		{"MissingParent", currency.Account{ID: "wallet/GPU/orphan", Currency: gpu, Kind: currency.Wallet, Parent: "wallet/GPU/nobody"}, bourse.EInvalid},
		{"ParentOfRevenue", currency.Account{ID: "revenue/GPU/s", Currency: gpu, Kind: currency.Revenue, Parent: org}, bourse.EInvalid},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			_, err := f.l.OpenAccount(f.ctx, c.acc)
			assert.Equal(t, c.code, bourse.ErrorCode(err), "%v", err)
		})
	}
	t.Run("ENotFound", func(t *testing.T) {
		_, err := f.l.Account(f.ctx, "wallet/GPU/nobody")
		assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err), "%v", err)
		_, err = f.l.Balance(f.ctx, "wallet/GPU/nobody")
		assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err), "%v", err)
		_, err = f.l.Statement(f.ctx, "wallet/GPU/nobody", 0, 10)
		assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err), "%v", err)
		_, err = f.l.Hold(f.ctx, "nohold")
		assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err), "%v", err)
	})
	f.audit()
}

func testTransfers(t *testing.T, open Opener) {
	f := newFixture(t, open)
	alice, bob := f.wallet("alice"), f.wallet("bob")
	require.NoError(t, f.l.CreateCurrency(f.ctx, currency.Currency{Code: "EUR", Scale: 2}))
	euro, err := f.l.OpenAccount(f.ctx, currency.Account{ID: currency.WalletID("EUR", "alice"), Currency: "EUR", Kind: currency.Wallet})
	require.NoError(t, err)

	r := f.ok(currency.Transfer{Key: "mint-1", From: currency.IssuanceID(gpu), To: alice, Amount: dectest.D("100.00"), Memo: "grant"})
	require.Len(t, r.Movements, 1)
	m := r.Movements[0]
	assert.Equal(t, "mint-1", m.Key)
	assert.Equal(t, currency.IssuanceID(gpu), m.From)
	assert.Equal(t, alice, m.To)
	assert.True(t, m.Amount.Equal(dectest.D("100")))
	assert.Equal(t, "transfer", r.Op)
	f.balance(currency.IssuanceID(gpu), "-100", "0")
	f.balance(alice, "100", "0")

	f.ok(currency.Transfer{Key: "pay-1", From: alice, To: bob, Amount: dectest.D("30.5")})
	f.balance(alice, "69.5", "0")
	f.balance(bob, "30.5", "0")

	t.Run("EInsufficientFunds", func(t *testing.T) {
		f.fails(currency.Transfer{Key: "pay-2", From: bob, To: alice, Amount: dectest.D("30.51")}, bourse.EInsufficientFunds)
		f.balance(bob, "30.5", "0")
	})
	t.Run("WholeBalance", func(t *testing.T) {
		f.ok(currency.Transfer{Key: "pay-3", From: bob, To: alice, Amount: dectest.D("30.50")})
		f.balance(bob, "0", "0")
	})
	cases := []struct {
		name string
		op   currency.Transfer
		code bourse.Code
	}{
		{"TooManyDecimals", currency.Transfer{Key: "k1", From: alice, To: bob, Amount: dectest.D("0.001")}, bourse.EInvalid},
		{"Zero", currency.Transfer{Key: "k2", From: alice, To: bob, Amount: dectest.D("0")}, bourse.EInvalid},
		{"Negative", currency.Transfer{Key: "k3", From: alice, To: bob, Amount: dectest.D("-1")}, bourse.EInvalid},
		{"SameAccount", currency.Transfer{Key: "k4", From: alice, To: alice, Amount: dectest.D("1")}, bourse.EInvalid},
		{"UnknownFrom", currency.Transfer{Key: "k5", From: "wallet/GPU/nobody", To: alice, Amount: dectest.D("1")}, bourse.ENotFound},
		{"UnknownTo", currency.Transfer{Key: "k6", From: alice, To: "wallet/GPU/nobody", Amount: dectest.D("1")}, bourse.ENotFound},
		{"ECurrencyMismatch", currency.Transfer{Key: "k7", From: alice, To: euro.ID, Amount: dectest.D("1")}, bourse.ECurrencyMismatch},
		{"EmptyKey", currency.Transfer{Key: "", From: alice, To: bob, Amount: dectest.D("1")}, bourse.EInvalid},
		{"NULInMemo", currency.Transfer{Key: "k8", From: alice, To: bob, Amount: dectest.D("1"), Memo: "a\x00b"}, bourse.EInvalid},
		{"BadUTF8Memo", currency.Transfer{Key: "k9", From: alice, To: bob, Amount: dectest.D("1"), Memo: "\xff"}, bourse.EInvalid},
		{"AmountAtLimit", currency.Transfer{Key: "k10", From: currency.IssuanceID(gpu), To: bob, Amount: currency.MaxAmount}, bourse.EInvalid},
		{"SupplyPastLimit", currency.Transfer{Key: "k11", From: currency.IssuanceID(gpu), To: bob, Amount: currency.MaxAmount.Sub(dectest.D("50"))}, bourse.EInvalid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f.fails(c.op, c.code)
		})
	}
	f.balance(alice, "100", "0")
	f.balance(bob, "0", "0")
	rep := f.audit()
	assert.Equal(t, 2, rep.Currencies)
	assert.Equal(t, 3, rep.Movements)
}

func testIdempotency(t *testing.T, open Opener) {
	f := newFixture(t, open)
	alice, bob := f.wallet("alice"), f.wallet("bob")
	first := f.ok(currency.Transfer{Key: "mint", From: currency.IssuanceID(gpu), To: alice, Amount: dectest.D("10")})

	t.Run("SameKeySameContent", func(t *testing.T) {
		f.clock.Advance(time.Hour)
		again := f.ok(currency.Transfer{Key: "mint", From: currency.IssuanceID(gpu), To: alice, Amount: dectest.D("10.00")})
		require.Len(t, again.Movements, 1)
		assert.Equal(t, first.Movements[0].ID, again.Movements[0].ID)
		assert.True(t, first.Movements[0].At.Equal(again.Movements[0].At), "the first result, not a new one")
		f.balance(alice, "10", "0")
	})
	t.Run("SameKeyOtherContent", func(t *testing.T) {
		f.fails(currency.Transfer{Key: "mint", From: currency.IssuanceID(gpu), To: alice, Amount: dectest.D("11")}, bourse.EIdempotencyConflict)
		f.fails(currency.Void{Key: "mint", Hold: "h"}, bourse.EIdempotencyConflict)
		f.balance(alice, "10", "0")
	})
	// The error names the first field that differs, or the key when the
	// kind of operation does.
	t.Run("ConflictNamesField", func(t *testing.T) {
		for _, c := range []struct {
			op      currency.Op
			field   string
			message string
		}{
			{currency.Transfer{Key: "mint", From: currency.IssuanceID(gpu), To: alice, Amount: dectest.D("11"), Memo: "x"}, "amount",
				`key "mint" was used before for a transfer with another amount`},
			{currency.Transfer{Key: "mint", From: currency.IssuanceID(gpu), To: bob, Amount: dectest.D("10")}, "to",
				`key "mint" was used before for a transfer with another to`},
			{currency.Transfer{Key: "mint", From: bob, To: alice, Amount: dectest.D("10")}, "from",
				`key "mint" was used before for a transfer with another from`},
			{currency.Void{Key: "mint", Hold: "h"}, "key", `key "mint" was used before for a transfer, not a void`},
		} {
			r := f.fails(c.op, bourse.EIdempotencyConflict)
			assert.Equal(t, c.field, r.Err.Field, "%+v: %v", c.op, r.Err)
			assert.Equal(t, c.message, r.Err.Message)
		}
		f.balance(alice, "10", "0")
	})
	// A memo is a note for the statement: the same operation with another
	// memo, or none, is a replay and returns the first result, memo and all.
	t.Run("MemoIsNotContent", func(t *testing.T) {
		carol, srv := f.wallet("carol"), f.revenue("memo-srv")
		g1 := f.ok(currency.Transfer{Key: "grant-carol", From: currency.IssuanceID(gpu), To: carol, Amount: dectest.D("30"), Memo: "November allocation"})
		g2 := f.ok(currency.Transfer{Key: "grant-carol", From: currency.IssuanceID(gpu), To: carol, Amount: dectest.D("30.00")})
		replayOf(t, g1, g2)
		assert.Equal(t, "November allocation", g2.Movements[0].Memo)
		f.ok(currency.Transfer{Key: "grant-carol", From: currency.IssuanceID(gpu), To: carol, Amount: dectest.D("30"), Memo: "another note"})
		f.balance(carol, "30", "0")

		dl := f.clock.Now().Add(time.Hour)
		for i, memos := range [][2]string{{"prepayment", ""}, {"", "prepayment"}} {
			hold := currency.HoldID(fmt.Sprintf("memo-h%d", i))
			r1 := f.ok(currency.Reserve{Key: "memo-r" + string(hold), Hold: hold, From: carol, Amount: dectest.D("5"), Deadline: dl, Memo: memos[0]})
			r2 := f.ok(currency.Reserve{Key: "memo-r" + string(hold), Hold: hold, From: carol, Amount: dectest.D("5"), Deadline: dl, Memo: memos[1]})
			replayOf(t, r1, r2)
		}
		f.balance(carol, "20", "10")
		c1 := f.ok(currency.Capture{Key: "memo-c", Hold: "memo-h0", To: srv, Amount: dectest.D("2"), Memo: "settled"})
		c2 := f.ok(currency.Capture{Key: "memo-c", Hold: "memo-h0", To: srv, Amount: dectest.D("2")})
		replayOf(t, c1, c2)
		assert.Equal(t, "settled", c2.Movements[0].Memo)
		v1 := f.ok(currency.Void{Key: "memo-v", Hold: "memo-h1"})
		v2 := f.ok(currency.Void{Key: "memo-v", Hold: "memo-h1", Memo: "voided"})
		replayOf(t, v1, v2)
		f.balance(carol, "28", "0")
		f.balance(srv, "2", "0")

		// Still, the fields that move money are compared.
		r := f.fails(currency.Capture{Key: "memo-c", Hold: "memo-h0", To: srv, Amount: dectest.D("3"), Memo: "settled"}, bourse.EIdempotencyConflict)
		assert.Equal(t, "amount", r.Err.Field)
		r = f.fails(currency.Reserve{Key: "memo-rmemo-h0", Hold: "memo-h0", From: carol, Amount: dectest.D("5"), Deadline: dl.Add(time.Second)}, bourse.EIdempotencyConflict)
		assert.Equal(t, "deadline", r.Err.Field)
	})
	t.Run("FailedKeyStaysFailed", func(t *testing.T) {
		f.fails(currency.Transfer{Key: "pay", From: bob, To: alice, Amount: dectest.D("5")}, bourse.EInsufficientFunds)
		f.mint("fund-bob", bob, "50")
		f.fails(currency.Transfer{Key: "pay", From: bob, To: alice, Amount: dectest.D("5")}, bourse.EInsufficientFunds)
		f.balance(bob, "50", "0")
		f.ok(currency.Transfer{Key: "pay-2", From: bob, To: alice, Amount: dectest.D("5")})
		f.balance(bob, "45", "0")
	})
	t.Run("HoldOps", func(t *testing.T) {
		srv := f.revenue("srv")
		dl := f.clock.Now().Add(time.Hour)
		f.ok(currency.Reserve{Key: "r", Hold: "h1", From: bob, Amount: dectest.D("20"), Deadline: dl})
		f.ok(currency.Reserve{Key: "r", Hold: "h1", From: bob, Amount: dectest.D("20"), Deadline: dl})
		f.balance(bob, "25", "20")
		c1 := f.ok(currency.Capture{Key: "c", Hold: "h1", To: srv, Amount: dectest.D("7")})
		c2 := f.ok(currency.Capture{Key: "c", Hold: "h1", To: srv, Amount: dectest.D("7")})
		assert.Equal(t, c1.Hold.Status, c2.Hold.Status)
		f.balance(bob, "38", "0")
		f.balance(srv, "7", "0")
	})
	f.audit()
}

// replayOf requires b to be a replay of a: the same movements, memos
// included.
func replayOf(t testing.TB, a, b currency.Result) {
	t.Helper()
	require.Equal(t, len(a.Movements), len(b.Movements))
	for i, m := range a.Movements {
		n := b.Movements[i]
		assert.Equal(t, m.ID, n.ID)
		assert.Equal(t, m.Memo, n.Memo, "%s keeps the first memo", m.ID)
		assert.True(t, m.Amount.Equal(n.Amount) && m.At.Equal(n.At), "%s: %+v, replayed as %+v", m.ID, m, n)
	}
}

func testHolds(t *testing.T, open Opener) {
	f := newFixture(t, open)
	alice, srv := f.wallet("alice"), f.revenue("srv")
	f.mint("m", alice, "100")
	dl := f.clock.Now().Add(10 * time.Minute)

	r := f.ok(currency.Reserve{Key: "hold-1", Hold: "c1", From: alice, Amount: dectest.D("40"), Deadline: dl, Memo: "contract c1"})
	require.NotNil(t, r.Hold)
	assert.Equal(t, currency.HoldOpen, r.Hold.Status)
	assert.True(t, r.Hold.Deadline.Equal(dl))
	f.balance(alice, "60", "40")
	f.balance(currency.EscrowID("c1"), "40", "0")

	t.Run("EInsufficientFunds", func(t *testing.T) {
		f.fails(currency.Reserve{Key: "hold-2", Hold: "c2", From: alice, Amount: dectest.D("60.01"), Deadline: dl}, bourse.EInsufficientFunds)
		_, err := f.l.Hold(f.ctx, "c2")
		assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err))
	})
	t.Run("EConflict", func(t *testing.T) {
		f.fails(currency.Reserve{Key: "hold-1b", Hold: "c1", From: alice, Amount: dectest.D("1"), Deadline: dl}, bourse.EConflict)
	})
	t.Run("OnlyWallets", func(t *testing.T) {
		f.fails(currency.Reserve{Key: "hold-3", Hold: "c3", From: srv, Amount: dectest.D("1"), Deadline: dl}, bourse.EInvalid)
	})
	t.Run("NoDeadline", func(t *testing.T) {
		f.fails(currency.Reserve{Key: "hold-4", Hold: "c4", From: alice, Amount: dectest.D("1")}, bourse.EInvalid)
	})
	t.Run("EscrowCannotTransfer", func(t *testing.T) {
		f.fails(currency.Transfer{Key: "steal", From: currency.EscrowID("c1"), To: alice, Amount: dectest.D("1")}, bourse.EInvalid)
	})
	t.Run("CaptureTooMuch", func(t *testing.T) {
		f.fails(currency.Capture{Key: "cap-x", Hold: "c1", To: srv, Amount: dectest.D("40.01")}, bourse.EInvalid)
		f.fails(currency.Capture{Key: "cap-y", Hold: "c1", To: srv, Amount: dectest.D("-1")}, bourse.EInvalid)
		f.fails(currency.Capture{Key: "cap-z", Hold: "c1", To: currency.IssuanceID(gpu), Amount: dectest.D("1")}, bourse.EInvalid)
	})
	t.Run("Capture", func(t *testing.T) {
		f.clock.Advance(time.Minute)
		r := f.ok(currency.Capture{Key: "cap-1", Hold: "c1", To: srv, Amount: dectest.D("12.34")})
		h := r.Hold
		require.NotNil(t, h)
		assert.Equal(t, currency.HoldCaptured, h.Status)
		assert.True(t, h.Captured.Equal(dectest.D("12.34")))
		assert.True(t, h.Released.Equal(dectest.D("27.66")))
		assert.Equal(t, srv, h.CapturedTo)
		assert.Len(t, r.Movements, 2)
		f.balance(alice, "87.66", "0")
		f.balance(srv, "12.34", "0")
		f.balance(currency.EscrowID("c1"), "0", "0")
		got, err := f.l.Hold(f.ctx, "c1")
		require.NoError(t, err)
		assert.Equal(t, currency.HoldCaptured, got.Status)
		assert.True(t, got.Resolved.Equal(f.clock.Now()))
	})
	t.Run("EHoldResolved", func(t *testing.T) {
		f.fails(currency.Capture{Key: "cap-2", Hold: "c1", To: srv, Amount: dectest.D("1")}, bourse.EHoldResolved)
		f.fails(currency.Void{Key: "void-1", Hold: "c1"}, bourse.EHoldResolved)
		f.clock.Advance(time.Hour)
		f.fails(currency.Expire{Key: "exp-1", Hold: "c1"}, bourse.EHoldResolved)
		f.balance(srv, "12.34", "0")
	})
	t.Run("Void", func(t *testing.T) {
		f.ok(currency.Reserve{Key: "hold-5", Hold: "c5", From: alice, Amount: dectest.D("50"), Deadline: f.clock.Now().Add(time.Hour)})
		f.balance(alice, "37.66", "50")
		r := f.ok(currency.Void{Key: "void-5", Hold: "c5"})
		assert.Equal(t, currency.HoldVoided, r.Hold.Status)
		assert.True(t, r.Hold.Released.Equal(dectest.D("50")))
		f.balance(alice, "87.66", "0")
	})
	t.Run("CaptureAll", func(t *testing.T) {
		f.ok(currency.Reserve{Key: "hold-6", Hold: "c6", From: alice, Amount: dectest.D("7.66"), Deadline: f.clock.Now().Add(time.Hour)})
		r := f.ok(currency.Capture{Key: "cap-6", Hold: "c6", To: srv, Amount: dectest.D("7.66")})
		assert.Len(t, r.Movements, 1, "nothing to release")
		f.balance(alice, "80", "0")
	})
	t.Run("CaptureNothing", func(t *testing.T) {
		f.ok(currency.Reserve{Key: "hold-7", Hold: "c7", From: alice, Amount: dectest.D("10"), Deadline: f.clock.Now().Add(time.Hour)})
		r := f.ok(currency.Capture{Key: "cap-7", Hold: "c7", To: srv, Amount: dectest.D("0")})
		assert.Len(t, r.Movements, 1, "all released")
		f.balance(alice, "80", "0")
	})
	t.Run("UnknownHold", func(t *testing.T) {
		f.fails(currency.Capture{Key: "cap-8", Hold: "nope", To: srv, Amount: dectest.D("1")}, bourse.ENotFound)
	})
	f.balance(srv, "20", "0")
	rep := f.audit()
	assert.Equal(t, 4, rep.Holds)
	assert.Equal(t, 0, rep.OpenHolds)
}

func testExpiry(t *testing.T, open Opener) {
	f := newFixture(t, open)
	alice := f.wallet("alice")
	f.mint("m", alice, "100")
	start := f.clock.Now()
	f.ok(currency.Reserve{Key: "a", Hold: "late", From: alice, Amount: dectest.D("10"), Deadline: start.Add(20 * time.Minute)})
	f.ok(currency.Reserve{Key: "b", Hold: "early", From: alice, Amount: dectest.D("20"), Deadline: start.Add(10 * time.Minute)})

	due, err := f.l.DueHolds(f.ctx, 10)
	require.NoError(t, err)
	assert.Empty(t, due)
	f.fails(currency.Expire{Key: "x1", Hold: "early"}, bourse.EHoldNotDue)

	f.clock.Advance(10 * time.Minute)
	due, err = f.l.DueHolds(f.ctx, 10)
	require.NoError(t, err)
	require.Len(t, due, 1, "a deadline is due at its instant")
	assert.Equal(t, currency.HoldID("early"), due[0].ID)

	f.clock.Advance(time.Hour)
	due, err = f.l.DueHolds(f.ctx, 10)
	require.NoError(t, err)
	require.Len(t, due, 2)
	assert.Equal(t, currency.HoldID("early"), due[0].ID, "oldest deadline first")
	due, err = f.l.DueHolds(f.ctx, 1)
	require.NoError(t, err)
	assert.Len(t, due, 1)

	f.fails(currency.Expire{Key: "x1", Hold: "early"}, bourse.EHoldNotDue) // the key stays failed
	r := f.ok(currency.Expire{Key: "x2", Hold: "early"})
	assert.Equal(t, currency.HoldExpired, r.Hold.Status)
	f.balance(alice, "90", "10")
	due, err = f.l.DueHolds(f.ctx, 10)
	require.NoError(t, err)
	require.Len(t, due, 1)
	assert.Equal(t, currency.HoldID("late"), due[0].ID)
	f.audit()
}

func testBatch(t *testing.T, open Opener) {
	f := newFixture(t, open)
	alice, srv := f.wallet("alice"), f.revenue("srv")
	dl := f.clock.Now().Add(time.Hour)
	rs, err := f.l.Apply(f.ctx,
		currency.Transfer{Key: "m", From: currency.IssuanceID(gpu), To: alice, Amount: dectest.D("10")},
		currency.Reserve{Key: "r", Hold: "h", From: alice, Amount: dectest.D("8"), Deadline: dl},
		currency.Transfer{Key: "t", From: alice, To: srv, Amount: dectest.D("5")}, // fails: 2 left
		currency.Capture{Key: "c", Hold: "h", To: srv, Amount: dectest.D("3")},
		currency.Capture{Key: "c", Hold: "h", To: srv, Amount: dectest.D("3")}, // replay inside the batch
	)
	require.NoError(t, err)
	require.Len(t, rs, 5)
	assert.Nil(t, rs[0].Err)
	assert.Nil(t, rs[1].Err)
	require.NotNil(t, rs[2].Err)
	assert.Equal(t, bourse.EInsufficientFunds, rs[2].Err.Code)
	assert.Nil(t, rs[3].Err)
	assert.Equal(t, rs[3].Movements, rs[4].Movements)
	f.balance(alice, "7", "0")
	f.balance(srv, "3", "0")
	f.audit()
}

func testStatement(t *testing.T, open Opener) {
	f := newFixture(t, open)
	alice, bob := f.wallet("alice"), f.wallet("bob")
	f.mint("m1", alice, "10")
	f.ok(currency.Transfer{Key: "p1", From: alice, To: bob, Amount: dectest.D("3"), Memo: "lunch"})
	f.ok(currency.Reserve{Key: "r1", Hold: "h1", From: alice, Amount: dectest.D("4"), Deadline: f.clock.Now().Add(time.Hour)})
	f.ok(currency.Capture{Key: "c1", Hold: "h1", To: bob, Amount: dectest.D("1")})

	es, err := f.l.Statement(f.ctx, alice, 0, 100)
	require.NoError(t, err)
	want := []struct {
		amount, balance string
		cp              currency.AccountID
		key             string
	}{
		{"10", "10", currency.IssuanceID(gpu), "m1"},
		{"-3", "7", bob, "p1"},
		{"-4", "3", currency.EscrowID("h1"), "r1"},
		{"3", "6", currency.EscrowID("h1"), "c1"},
	}
	require.Len(t, es, len(want))
	for i, w := range want {
		e := es[i]
		assert.Equal(t, int64(i+1), e.Seq)
		assert.True(t, e.Amount.Equal(dectest.D(w.amount)), "entry %d amount %s, want %s", i+1, e.Amount, w.amount)
		assert.True(t, e.Balance.Equal(dectest.D(w.balance)), "entry %d balance %s, want %s", i+1, e.Balance, w.balance)
		assert.Equal(t, w.cp, e.Counterparty, "entry %d", i+1)
		assert.Equal(t, w.key, e.Key, "entry %d", i+1)
		assert.Equal(t, alice, e.Account)
	}
	assert.Equal(t, "lunch", es[1].Memo)
	assert.Equal(t, currency.HoldID("h1"), es[2].Hold)

	page, err := f.l.Statement(f.ctx, alice, 1, 2)
	require.NoError(t, err)
	require.Len(t, page, 2)
	assert.Equal(t, int64(2), page[0].Seq)
	assert.Equal(t, int64(3), page[1].Seq)
	rest, err := f.l.Statement(f.ctx, alice, 4, 10)
	require.NoError(t, err)
	assert.Empty(t, rest)
	f.audit()
}
