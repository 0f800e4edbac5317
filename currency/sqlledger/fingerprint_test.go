package sqlledger

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/currency"
)

// TestLegacyFingerprints replays keys whose results rows were written
// before fingerprints left the memo out: one hash of the kind, the fields
// and the memo, as 32 hex digits. They still compare whole: a replay with
// the first memo, or with another when the first result's movement keeps
// the first, returns the first result; anything else is a conflict that
// can name no field.
func TestLegacyFingerprints(t *testing.T) {
	ctx := context.Background()
	l, _ := openTest(t, Options{})
	require.NoError(t, l.CreateCurrency(ctx, currency.Currency{Code: "GPU", Scale: 2}))
	alice, err := l.OpenAccount(ctx, currency.Account{ID: currency.WalletID("GPU", "alice"), Currency: "GPU", Kind: currency.Wallet})
	require.NoError(t, err)
	bob, err := l.OpenAccount(ctx, currency.Account{ID: currency.WalletID("GPU", "bob"), Currency: "GPU", Kind: currency.Wallet})
	require.NoError(t, err)
	d := decimal.RequireFromString
	old := func(parts ...string) string {
		h := sha256.Sum256([]byte(strings.Join(parts, "\x1f")))
		return hex.EncodeToString(h[:16])
	}
	rewrite := func(key, print string) {
		t.Helper()
		tag, err := l.pool.Exec(ctx, `UPDATE results SET fingerprint = $1 WHERE idem_key = $2`, print, key)
		require.NoError(t, err)
		require.EqualValues(t, 1, tag.RowsAffected())
	}

	grant := currency.Transfer{Key: "grant-2026-11-alice", From: currency.IssuanceID("GPU"), To: alice.ID, Amount: d("500"), Memo: "November allocation"}
	first, err := currency.Do(ctx, l, grant)
	require.NoError(t, err)
	rewrite(grant.Key, old("transfer", string(grant.From), string(grant.To), "500", grant.Memo))
	// A payment bob could not make: no movement keeps its memo.
	pay := currency.Transfer{Key: "pay", From: bob.ID, To: alice.ID, Amount: d("5"), Memo: "lunch"}
	r, err := l.Apply(ctx, pay)
	require.NoError(t, err)
	require.Equal(t, bourse.EInsufficientFunds, r[0].Err.Code)
	rewrite(pay.Key, old("transfer", string(pay.From), string(pay.To), "5", pay.Memo))

	for _, memo := range []string{"November allocation", ""} {
		again := grant
		again.Memo, again.Amount = memo, d("500.00")
		r, err := currency.Do(ctx, l, again)
		require.NoError(t, err, "memo %q", memo)
		assert.Equal(t, first.Movements[0].ID, r.Movements[0].ID)
		assert.Equal(t, "November allocation", r.Movements[0].Memo)
	}
	more := grant
	more.Amount = d("501")
	rs, err := l.Apply(ctx, more)
	require.NoError(t, err)
	require.NotNil(t, rs[0].Err)
	assert.Equal(t, bourse.EIdempotencyConflict, rs[0].Err.Code)
	assert.Equal(t, "key", rs[0].Err.Field)
	assert.Equal(t, `key "grant-2026-11-alice" was used before for a transfer with different content`, rs[0].Err.Message)

	rs, err = l.Apply(ctx, pay)
	require.NoError(t, err)
	assert.Equal(t, bourse.EInsufficientFunds, rs[0].Err.Code, "the first result, failed")
	pay.Memo = ""
	rs, err = l.Apply(ctx, pay)
	require.NoError(t, err)
	assert.Equal(t, bourse.EIdempotencyConflict, rs[0].Err.Code, "nothing tells the first memo")

	b, err := l.Balance(ctx, alice.ID)
	require.NoError(t, err)
	assert.True(t, b.Available.Equal(d("500")), "granted once: %s", b.Available)
}
