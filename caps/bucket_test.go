package caps_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/caps"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/internal/dectest"
)

// A bucket's change moves the difference of capacities, back only as far
// as what is not held; a refill gives the steps' worth at the bucket's
// rate, rounded down, up to its capacity.
func TestBucket(t *testing.T) {
	iss := currency.IssuanceID(caps.SpendCode("CRED"))
	b := caps.Bucket{Owner: "alice", Currency: "CRED", Capacity: dectest.D("300"), PerHour: dectest.D("100")}
	w := caps.BucketWallet("alice", "CRED")
	assert.Equal(t, w, b.Wallet())

	t.Run("Change", func(t *testing.T) {
		assert.Equal(t, []currency.Op{currency.Transfer{Key: "k/bucket", From: iss, To: w, Amount: dectest.D("300"), Memo: "spend rate of alice"}}, b.Change(dectest.D("0"), "k"),
			"a new bucket starts full")
		lower := b
		lower.Capacity = dectest.D("200")
		assert.Equal(t, []currency.Op{currency.Transfer{Key: "k2/bucket", From: w, To: iss, Amount: dectest.D("100"), UpTo: true, Memo: "spend rate of alice"}}, lower.Change(dectest.D("300"), "k2"))
		assert.Empty(t, b.Change(dectest.D("300"), "k3"))
	})
	t.Run("Refill", func(t *testing.T) {
		for _, c := range []struct {
			name, bal string
			steps     int64
			want      string
		}{
			{"AnHour", "0", 60, "100"},
			{"UpToCapacity", "250", 60, "50"},
			{"Full", "300", 60, "0"},
			{"PastCapacity", "320", 60, "0"}, // refunds took it past
			{"RoundedDown", "0", 1, "1.66"},  // 100/60 a minute
			{"NoSteps", "0", 0, "0"},
		} {
			t.Run(c.name, func(t *testing.T) {
				amount, ops := b.Refill(dectest.D(c.bal), c.steps, 2, "refill-key")
				assert.Equal(t, c.want, amount.String())
				if amount.IsZero() {
					assert.Empty(t, ops)
					return
				}
				require.Len(t, ops, 1)
				tr := ops[0].(currency.Transfer)
				assert.True(t, tr.Amount.Equal(amount), "%s moves %s", tr.Amount, amount)
				tr.Amount = amount
				assert.Equal(t, currency.Transfer{Key: "refill-key", From: iss, To: w, Amount: amount,
					Memo: fmt.Sprintf("refill of %d steps", c.steps)}, tr)
			})
		}
	})
	t.Run("StepAt", func(t *testing.T) {
		assert.Equal(t, int64(0), b.StepAt(time.Unix(59, 999999999)))
		assert.Equal(t, int64(1), b.StepAt(time.Unix(60, 0)), "a minute by default")
		tenSeconds := b
		tenSeconds.Step = 10 * time.Second
		assert.Equal(t, int64(6), tenSeconds.StepAt(time.Unix(60, 0)))
	})
}
