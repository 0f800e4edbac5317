package currency

import (
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"

	"github.com/bourse/bourse"
)

func TestCheckAmount(t *testing.T) {
	c := Currency{Code: "GPU", Scale: 2}
	for _, tc := range []struct {
		in   string
		code bourse.Code
	}{
		{"1", ""}, {"0.01", ""}, {"12.50", ""}, {"12.500", ""}, {"1e3", ""},
		{"0", bourse.EInvalid}, {"-0.01", bourse.EInvalid}, {"0.001", bourse.EInvalid}, {"1.005", bourse.EInvalid},
	} {
		err := c.CheckAmount("amount", decimal.RequireFromString(tc.in))
		assert.Equal(t, tc.code, bourse.ErrorCode(err), "%s: %v", tc.in, err)
	}
	zero := Currency{Code: "TOK", Scale: 0}
	assert.NoError(t, zero.CheckAmount("amount", decimal.NewFromInt(7)))
	assert.Error(t, zero.CheckAmount("amount", decimal.RequireFromString("7.1")))
}

func TestFingerprintCanonical(t *testing.T) {
	a := Transfer{Key: "k", From: "x", To: "y", Amount: decimal.RequireFromString("1.50")}
	b := Transfer{Key: "k", From: "x", To: "y", Amount: decimal.RequireFromString("1.5")}
	assert.Equal(t, a.fingerprint(), b.fingerprint(), "the same amount written two ways is the same request")
	b.Memo = "other"
	assert.NotEqual(t, a.fingerprint(), b.fingerprint())

	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	r1 := Reserve{Key: "k", Hold: "h", From: "x", Amount: decimal.NewFromInt(1), Deadline: at}
	r2 := r1
	r2.Deadline = at.In(time.FixedZone("CET", 3600))
	assert.Equal(t, r1.fingerprint(), r2.fingerprint(), "the same instant in another zone is the same request")
	assert.NotEqual(t, Void{Key: "k", Hold: "h"}.fingerprint(), Expire{Key: "k", Hold: "h"}.fingerprint())
}

func TestCheckName(t *testing.T) {
	assert.NoError(t, checkName("op", "id", "wallet/GPU/alice@example.org"))
	for _, bad := range []string{"", "a b", "tab\there", "nul\x00", string(make([]byte, 201))} {
		assert.Equal(t, bourse.EInvalid, bourse.ErrorCode(checkName("op", "id", bad)), "%q", bad)
	}
}

func TestErrorCodes(t *testing.T) {
	err := &bourse.Error{Code: bourse.EInsufficientFunds, Op: "currency.transfer", Field: "amount", Message: "short"}
	assert.Equal(t, "currency.transfer: insufficient_funds: amount: short", err.Error())
	assert.ErrorIs(t, err, &bourse.Error{Code: bourse.EInsufficientFunds})
	assert.NotErrorIs(t, err, &bourse.Error{Code: bourse.ENotFound})
	assert.Equal(t, bourse.EInternal, bourse.ErrorCode(assert.AnError))
}

func TestBounds(t *testing.T) {
	c := Currency{Code: "GPU", Scale: 2}
	assert.Error(t, c.CheckAmount("amount", MaxAmount))
	assert.NoError(t, c.CheckAmount("amount", MaxAmount.Sub(decimal.RequireFromString("0.01"))))
	assert.NoError(t, checkMemo("café, 500 bytes or fewer"))
	for _, bad := range []string{"nul\x00", "\xff\xfe", string(make([]byte, 501))} {
		assert.Equal(t, bourse.EInvalid, bourse.ErrorCode(checkMemo(bad)), "%q", bad)
	}
}
