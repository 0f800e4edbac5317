package currency

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
	fp := func(op Op) string { return op.content().fingerprint() }
	a := Transfer{Key: "k", From: "x", To: "y", Amount: decimal.RequireFromString("1.50")}
	b := Transfer{Key: "k", From: "x", To: "y", Amount: decimal.RequireFromString("1.5")}
	assert.Equal(t, fp(a), fp(b), "the same amount written two ways is the same request")
	b.Memo = "other"
	assert.Equal(t, fp(a), fp(b), "a memo is not content")
	b.Amount = decimal.RequireFromString("1.51")
	assert.NotEqual(t, fp(a), fp(b))

	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	r1 := Reserve{Key: "k", Hold: "h", From: "x", Amount: decimal.NewFromInt(1), Deadline: at}
	r2 := r1
	r2.Deadline = at.In(time.FixedZone("CET", 3600))
	assert.Equal(t, fp(r1), fp(r2), "the same instant in another zone is the same request")
	assert.NotEqual(t, fp(Void{Key: "k", Hold: "h"}), fp(Expire{Key: "k", Hold: "h"}))

	// Stored rows stay small whatever the fields hold: names of the
	// longest allowed size make no longer a fingerprint.
	long := AccountID(strings.Repeat("w", MaxIDLen))
	r3 := Reserve{Key: "k", Hold: HoldID(long), From: long, Amount: MaxAmount.Sub(decimal.New(1, -18)), Deadline: at, Memo: strings.Repeat("m", MaxMemoLen)}
	assert.Equal(t, "v2 reserve hold:"+fieldHash(string(long))+" from:"+fieldHash(string(long))+" amount:"+fieldHash(r3.Amount.String())+" deadline:"+fieldHash(fmt.Sprint(at.UnixNano())), fp(r3))
	assert.Len(t, fp(r3), 128, "the longest fingerprint: reserve")
}

// oldFingerprint is the fingerprint ledgers stored before v2, written out
// again here so that a change to legacyFingerprint cannot go unnoticed.
func oldFingerprint(parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x1f")))
	return hex.EncodeToString(h[:16])
}

// TestConflict compares operations with what an earlier one under the same
// key stored: the same operation with any memo is a replay; another names
// the first field that differs, for every kind of operation.
func TestConflict(t *testing.T) {
	d := decimal.RequireFromString
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	type change struct {
		op    Op
		field string // "" for a replay
	}
	tests := []struct {
		first   Op
		changes []change
	}{
		{Transfer{Key: "k", From: "issuance/GPU", To: "wallet/GPU/alice", Amount: d("10"), Memo: "grant"}, []change{
			{Transfer{Key: "k", From: "issuance/GPU", To: "wallet/GPU/alice", Amount: d("10.00")}, ""},
			{Transfer{Key: "k", From: "issuance/GPU", To: "wallet/GPU/alice", Amount: d("10"), Memo: "other"}, ""},
			{Transfer{Key: "k", From: "issuance/GPU", To: "wallet/GPU/alice", Amount: d("11"), Memo: "grant"}, "amount"},
			{Transfer{Key: "k", From: "issuance/GPU", To: "wallet/GPU/bob", Amount: d("11")}, "to"},
			{Transfer{Key: "k", From: "wallet/GPU/bob", To: "wallet/GPU/alice", Amount: d("10")}, "from"},
			{Void{Key: "k", Hold: "h"}, "key"},
		}},
		{Reserve{Key: "k", Hold: "h", From: "wallet/GPU/alice", Amount: d("5"), Deadline: at, Memo: "prepayment"}, []change{
			{Reserve{Key: "k", Hold: "h", From: "wallet/GPU/alice", Amount: d("5"), Deadline: at}, ""},
			{Reserve{Key: "k", Hold: "h2", From: "wallet/GPU/alice", Amount: d("5"), Deadline: at}, "hold"},
			{Reserve{Key: "k", Hold: "h", From: "wallet/GPU/bob", Amount: d("5"), Deadline: at}, "from"},
			{Reserve{Key: "k", Hold: "h", From: "wallet/GPU/alice", Amount: d("6"), Deadline: at}, "amount"},
			{Reserve{Key: "k", Hold: "h", From: "wallet/GPU/alice", Amount: d("5"), Deadline: at.Add(time.Second)}, "deadline"},
		}},
		{Capture{Key: "k", Hold: "h", To: "revenue/GPU/srv", Amount: d("2"), Memo: "settled"}, []change{
			{Capture{Key: "k", Hold: "h", To: "revenue/GPU/srv", Amount: d("2"), Memo: "killed"}, ""},
			{Capture{Key: "k", Hold: "h", To: "revenue/GPU/other", Amount: d("2")}, "to"},
			{Capture{Key: "k", Hold: "h", To: "revenue/GPU/srv", Amount: d("3")}, "amount"},
			{Transfer{Key: "k", From: "issuance/GPU", To: "revenue/GPU/srv", Amount: d("2")}, "key"},
		}},
		{Void{Key: "k", Hold: "h", Memo: "not started"}, []change{
			{Void{Key: "k", Hold: "h"}, ""},
			{Void{Key: "k", Hold: "h2", Memo: "not started"}, "hold"},
			{Expire{Key: "k", Hold: "h"}, "key"},
		}},
		{Expire{Key: "k", Hold: "h"}, []change{
			{Expire{Key: "k", Hold: "h"}, ""},
			{Expire{Key: "k", Hold: "h2"}, "hold"},
		}},
	}
	for _, tt := range tests {
		first := tt.first.content()
		stored := Result{Key: "k", Op: first.kind}
		for _, ch := range tt.changes {
			e := conflict(ch.op.content(), "k", stored, first.fingerprint())
			if ch.field == "" {
				assert.Nil(t, e, "%+v after %+v", ch.op, tt.first)
				continue
			}
			if assert.NotNil(t, e, "%+v after %+v", ch.op, tt.first) {
				assert.Equal(t, bourse.EIdempotencyConflict, e.Code)
				assert.Equal(t, ch.field, e.Field, "%s", e.Message)
				assert.Equal(t, "currency."+ch.op.content().kind, e.Op)
			}
		}
	}

	t.Run("Message", func(t *testing.T) {
		first := Transfer{Key: "k", From: "issuance/GPU", To: "wallet/GPU/alice", Amount: d("10")}
		e := conflict(Transfer{Key: "k", From: "issuance/GPU", To: "wallet/GPU/alice", Amount: d("11")}.content(), "k",
			Result{Op: "transfer"}, first.content().fingerprint())
		assert.Equal(t, `currency.transfer: idempotency_conflict: amount: key "k" was used before for a transfer with another amount`, e.Error())
		e = conflict(Void{Key: "k", Hold: "h"}.content(), "k", Result{Op: "transfer"}, first.content().fingerprint())
		assert.Equal(t, `key "k" was used before for a transfer, not a void`, e.Message)
	})

	// Rows written before v2 hold one hash of everything, the memo
	// included: compared whole, with the memo the operation has or the
	// memo the first one left in its movements.
	t.Run("Legacy", func(t *testing.T) {
		grant := Transfer{Key: "k", From: "issuance/GPU", To: "wallet/GPU/alice", Amount: d("10.00"), Memo: "November"}
		old := oldFingerprint("transfer", "issuance/GPU", "wallet/GPU/alice", "10", "November")
		assert.Equal(t, old, grant.content().legacyFingerprint("November"))
		done := Result{Key: "k", Op: "transfer", Movements: []Movement{{ID: "t/k", Memo: "November"}}}
		failed := Result{Key: "k", Op: "transfer", Err: &bourse.Error{Code: bourse.EInsufficientFunds}}

		assert.Nil(t, conflict(grant.content(), "k", done, old))
		assert.Nil(t, conflict(grant.content(), "k", failed, old))
		noMemo := grant
		noMemo.Memo = ""
		assert.Nil(t, conflict(noMemo.content(), "k", done, old), "the memo of the first, from its movement")
		e := conflict(noMemo.content(), "k", failed, old)
		require.NotNil(t, e, "no movement tells the first memo")
		assert.Equal(t, "key", e.Field)
		assert.Equal(t, `key "k" was used before for a transfer with different content`, e.Message)
		more := grant
		more.Amount = d("11")
		e = conflict(more.content(), "k", done, old)
		require.NotNil(t, e)
		assert.Equal(t, "key", e.Field)

		at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
		for _, c := range []struct {
			op  Op
			old string
		}{
			{Reserve{Hold: "h", From: "wallet/GPU/alice", Amount: d("5"), Deadline: at, Memo: "m"},
				oldFingerprint("reserve", "h", "wallet/GPU/alice", "5", fmt.Sprint(at.UnixNano()), "m")},
			{Capture{Hold: "h", To: "revenue/GPU/srv", Amount: d("2"), Memo: "m"}, oldFingerprint("capture", "h", "revenue/GPU/srv", "2", "m")},
			{Void{Hold: "h", Memo: "m"}, oldFingerprint("void", "h", "m")},
			{Expire{Hold: "h"}, oldFingerprint("expire", "h")},
		} {
			assert.Nil(t, conflict(c.op.content(), "k", Result{}, c.old), "%+v", c.op)
		}
	})
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

// TestAccountCurrency: the IDs the constructors make name their currency;
// an escrow's, and anything else, none.
func TestAccountCurrency(t *testing.T) {
	for _, tc := range []struct {
		id   AccountID
		want Code
		ok   bool
	}{
		{WalletID("CRED", "alice"), "CRED", true},
		{WalletID("GPU-CAP", "org/team"), "GPU-CAP", true}, // an owner may hold a slash
		{RevenueID("CRED", "gpu1"), "CRED", true},
		{IssuanceID("YEN"), "YEN", true},
		{EscrowID("hold-1"), "", false},
		{"wallet/CRED", "", false},
		{"wallet//alice", "", false},
		{"rate", "", false},
		{"2026-12-01T00:00:00Z", "", false},
	} {
		got, ok := tc.id.Currency()
		assert.Equal(t, tc.want, got, string(tc.id))
		assert.Equal(t, tc.ok, ok, string(tc.id))
	}
}
