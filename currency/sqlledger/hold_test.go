package sqlledger

import (
	"context"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/ledgertest"
)

// Times keep their nanoseconds in the database (TIMESTAMPTZ keeps
// microseconds), so a deadline is due at its very nanosecond, as in
// currency/mem.
func TestNanosecondDeadline(t *testing.T) {
	clock := ledgertest.NewClock()
	clock.Advance(123456789 * time.Nanosecond)
	l, _ := openTest(t, Options{Now: clock.Now})
	ctx := context.Background()
	require.NoError(t, l.CreateCurrency(ctx, currency.Currency{Code: "GPU", Scale: 2}))
	w, err := l.OpenAccount(ctx, currency.Account{ID: "wallet/GPU/a", Currency: "GPU", Kind: currency.Wallet})
	require.NoError(t, err)
	assert.True(t, w.Created.Equal(clock.Now()))
	_, err = currency.Do(ctx, l, currency.Transfer{Key: "m", From: currency.IssuanceID("GPU"), To: w.ID, Amount: decimal.NewFromInt(10)})
	require.NoError(t, err)
	dl := clock.Now().Add(time.Hour + 1)
	r, err := currency.Do(ctx, l, currency.Reserve{Key: "r", Hold: "h", From: w.ID, Amount: decimal.NewFromInt(4), Deadline: dl})
	require.NoError(t, err)

	h, err := l.Hold(ctx, "h")
	require.NoError(t, err)
	assert.True(t, h.Deadline.Equal(dl), "%s, want %s", h.Deadline, dl)
	assert.True(t, h.Created.Equal(clock.Now()))
	assert.True(t, h.Deadline.Equal(r.Hold.Deadline))

	clock.Advance(time.Hour) // 1ns before the deadline
	due, err := l.DueHolds(ctx, 0)
	require.NoError(t, err)
	assert.Empty(t, due)
	rs, err := l.Apply(ctx, currency.Expire{Key: "x1", Hold: "h"})
	require.NoError(t, err)
	require.NotNil(t, rs[0].Err)
	assert.Equal(t, bourse.EHoldNotDue, rs[0].Err.Code)

	clock.Advance(1)
	due, err = l.DueHolds(ctx, 0)
	require.NoError(t, err)
	require.Len(t, due, 1)
	r, err = currency.Do(ctx, l, currency.Expire{Key: "x2", Hold: "h"})
	require.NoError(t, err)
	es, err := l.Statement(ctx, w.ID, 0, 0)
	require.NoError(t, err)
	require.Len(t, es, 3)
	assert.True(t, es[2].At.Equal(clock.Now()))
	assert.Equal(t, r.Movements[0].At, es[2].At)
	h, err = l.Hold(ctx, "h")
	require.NoError(t, err)
	assert.True(t, h.Resolved.Equal(clock.Now()))
}
