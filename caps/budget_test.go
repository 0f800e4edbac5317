package caps_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/caps"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/internal/dectest"
)

// BudgetTo brings the budget of the period under way to a limit less all
// the period was given and used, decided on the ledger as the transaction
// reads it: a cap removed and set again, lowered or raised within a
// period still counts what the period used.
func TestBudgetTo(t *testing.T) {
	f := newFixture(t)
	w := caps.BudgetWallet("alice", "CRED", caps.Day, f.now)
	require.NoError(t, caps.OpenBudget(f.ctx, f.l, "CRED", 2, w))
	iss := currency.IssuanceID(caps.SpendCode("CRED"))
	to := func(limit, key string) []currency.Op {
		t.Helper()
		ops, err := f.tx(func(ctx context.Context, tx currency.TxReader) ([]currency.Op, error) {
			return caps.BudgetTo(ctx, tx, caps.Spend{Owner: "alice", Currency: "CRED", Period: caps.Day, Limit: dectest.D(limit)}, w, key)
		})
		require.NoError(t, err)
		return ops
	}

	t.Run("NeverGivenNoLimit", func(t *testing.T) {
		assert.Empty(t, to("0", "s0"))
	})
	t.Run("First", func(t *testing.T) {
		ops := to("100", "s1")
		assert.Equal(t, []currency.Op{currency.Transfer{Key: caps.BudgetKey(w), From: iss, To: w, Amount: dectest.D("100"), Memo: "day spend cap of alice set to 100"}}, ops,
			"under the House's key: a House that mints after finds it used")
		_, err := currency.Do(f.ctx, f.l, currency.Transfer{Key: caps.BudgetKey(w), From: iss, To: w, Amount: dectest.D("60"), Memo: "day spend cap of alice"})
		assert.Equal(t, bourse.EIdempotencyConflict, bourse.ErrorCode(err), "the House's mint, on the limit it read before")
	})
	// A contract takes 50 of it.
	f.do(currency.Reserve{Key: "r1", Hold: "spend/c1/0", From: w, Amount: dectest.D("50"), Deadline: f.now.Add(time.Hour)})
	f.do(currency.Capture{Key: "c1", Hold: "spend/c1/0", To: caps.SpentID("CRED"), Amount: dectest.D("50")})

	t.Run("Removed", func(t *testing.T) {
		ops := to("0", "s2")
		assert.Equal(t, []currency.Op{currency.Transfer{Key: "s2/budget", From: w, To: iss, Amount: dectest.D("100"), UpTo: true, Memo: "day spend cap of alice set to 0"}}, ops)
		avail, _ := f.balance(w)
		assert.Equal(t, "0", avail, "what was left, taken back")
	})
	t.Run("SetAgain", func(t *testing.T) {
		ops := to("100", "s3")
		assert.Equal(t, []currency.Op{currency.Transfer{Key: "s3/budget", From: iss, To: w, Amount: dectest.D("50"), Memo: "day spend cap of alice set to 100"}}, ops)
		avail, _ := f.balance(w)
		assert.Equal(t, "50", avail, "the 50 used this period still count")
	})
	t.Run("Lowered", func(t *testing.T) {
		to("80", "s4")
		avail, _ := f.balance(w)
		assert.Equal(t, "30", avail)
	})
	t.Run("Same", func(t *testing.T) {
		to("80", "s5")
		assert.Empty(t, to("80", "s6"))
	})
	f.audit()
}
