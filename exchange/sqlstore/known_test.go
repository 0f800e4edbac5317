package sqlstore_test

import (
	"context"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/sqlledger"
	"github.com/bourse/bourse/exchange/sqlstore"
)

// Two exchange instances on one database: the first decides an Update on
// the contract it wrote last, which the second has changed since. The
// change must run on the row as it is, and its money must follow the row:
// here the first instance's guess (the contract still accepted: release
// the escrow) and the truth (running: capture 4) move different money.
func TestUpdateDecidesOnTheRowNotTheKnown(t *testing.T) {
	s1, l1, dbURL := openTest(t, sqlledger.Options{})
	ctx := context.Background()
	f := setup(t, s1)
	f.open(t, "c1") // s1 knows c1, accepted

	l2, err := sqlledger.Open(ctx, dbURL, sqlledger.Options{})
	require.NoError(t, err)
	t.Cleanup(l2.Close)
	s2, err := sqlstore.Open(ctx, l2)
	require.NoError(t, err)
	t.Cleanup(s2.Close)
	_, err = s2.Update(ctx, "c1", func(c *contract.Contract) ([]currency.Op, error) {
		c.State, c.GPUs = contract.StateRunning, []int{3}
		return nil, nil
	})
	require.NoError(t, err)

	rev := currency.RevenueID("GPU", "srv")
	var seen []contract.State
	got, err := s1.Update(ctx, "c1", func(c *contract.Contract) ([]currency.Op, error) {
		seen = append(seen, c.State)
		if c.State == contract.StateAccepted {
			c.State, c.Reason = contract.StateVoided, contract.ReasonNotStarted
			return []currency.Op{currency.Void{Key: "void/c1", Hold: "c1"}}, nil
		}
		c.State, c.Reason = contract.StateSettled, contract.ReasonCompleted
		c.Charge, c.Refund = decimal.NewFromInt(4), decimal.NewFromInt(6)
		return []currency.Op{currency.Capture{Key: "settle/c1", Hold: "c1", To: rev, Amount: c.Charge}}, nil
	})
	require.NoError(t, err)
	assert.Equal(t, contract.StateRunning, seen[len(seen)-1], "the last run decides, on the row as stored")
	assert.Equal(t, contract.StateSettled, got.State)
	assert.Equal(t, []int{3}, got.GPUs, "what the other instance wrote is kept")

	c, err := s1.Contract(ctx, "c1")
	require.NoError(t, err)
	assert.Equal(t, contract.StateSettled, c.State)
	assert.Equal(t, []int{3}, c.GPUs)
	b, err := l1.Balance(ctx, rev)
	require.NoError(t, err)
	assert.True(t, b.Available.Equal(decimal.NewFromInt(4)), "revenue %s: the capture, not the release", b.Available)
	h, err := l1.Hold(ctx, "c1")
	require.NoError(t, err)
	assert.Equal(t, currency.HoldCaptured, h.Status)
	rep, err := l1.Audit(ctx)
	require.NoError(t, err)
	assert.True(t, rep.OK(), "%s", rep)
}
