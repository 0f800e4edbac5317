package sqlstore

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/sqlledger"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/internal/pgtest"
)

func uidOf(i int) [16]byte { return [16]byte{byte(i), byte(i >> 8)} }

// The contract known is a clone: a change written into what get returns
// leaves the known one as it was.
func TestKnownGetClones(t *testing.T) {
	k := newKnown(8)
	c := contract.Contract{ID: "c1", State: contract.StateRunning, GPUs: []int{1}}
	k.put(uidOf(1), record("r1"), &c)
	c.GPUs[0] = 9 // the caller's copy, after put
	rec, got, ok := k.get(uidOf(1))
	require.True(t, ok)
	assert.Equal(t, record("r1"), rec)
	assert.Equal(t, []int{1}, got.GPUs)
	got.GPUs[0] = 7
	_, again, _ := k.get(uidOf(1))
	assert.Equal(t, []int{1}, again.GPUs)
}

// Contracts age out two generations of max/2 later, ended or not, so
// that memory stays bounded whatever other instances end; a contract
// written again is kept.
func TestKnownBounded(t *testing.T) {
	k := newKnown(8)
	running := contract.Contract{State: contract.StateRunning}
	for i := range 100 {
		k.put(uidOf(i), record("r"), &running)
		assert.LessOrEqual(t, k.len(), 8)
	}
	_, _, ok := k.get(uidOf(99))
	assert.True(t, ok, "the newest is kept")
	_, _, ok = k.get(uidOf(0))
	assert.False(t, ok, "the oldest aged out")

	ended := contract.Contract{State: contract.StateSettled}
	k.put(uidOf(99), record("r2"), &ended)
	rec, c, ok := k.get(uidOf(99))
	require.True(t, ok, "a settled contract is kept: Updates still come to it")
	assert.Equal(t, record("r2"), rec)
	assert.Equal(t, contract.StateSettled, c.State)
	for i := range 4 {
		k.put(uidOf(200+i), record("r"), &running)
	}
	k.put(uidOf(99), record("r3"), &ended) // written again: kept
	for i := range 3 {
		k.put(uidOf(300+i), record("r"), &running)
	}
	_, _, ok = k.get(uidOf(99))
	assert.True(t, ok, "written again, it is in the newer generation")
	for i := range 8 {
		k.put(uidOf(400+i), record("r"), &ended)
		assert.LessOrEqual(t, k.len(), 8)
	}
	_, _, ok = k.get(uidOf(99))
	assert.False(t, ok, "ended contracts age out as others do")
}

// An instance alone decides each Update on the contract it wrote last,
// the row's round trip saved; a contract it did not write, it decides on
// the row.
func TestUpdatesTakeTheKnown(t *testing.T) {
	ctx := context.Background()
	l, err := sqlledger.Open(ctx, pgtest.FreshDB(t), sqlledger.Options{})
	require.NoError(t, err)
	t.Cleanup(l.Close)
	s, err := Open(ctx, l)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	require.NoError(t, l.CreateCurrency(ctx, currency.Currency{Code: "GPU", Scale: 2}))

	c := contract.Contract{ID: "c1", Client: "alice", Server: "srv", State: contract.StateAccepted}
	_, created, err := s.Open(ctx, c, "")
	require.NoError(t, err)
	require.True(t, created)
	for i, st := range []contract.State{contract.StateRunning, contract.StateRunning, contract.StateSettled} {
		got, err := s.Update(ctx, "c1", func(c *contract.Contract) ([]currency.Op, error) {
			c.State, c.GPUs = st, append(c.GPUs, i)
			return nil, nil
		})
		require.NoError(t, err)
		assert.Equal(t, st, got.State)
		stored, err := s.Contract(ctx, "c1")
		require.NoError(t, err)
		assert.Equal(t, got.GPUs, stored.GPUs, "update %d", i)
	}
	assert.EqualValues(t, 3, s.taken.Load())
	assert.Equal(t, 1, s.known.len(), "settled: kept, for the Updates that still come")

	// Settled, a change that changes nothing is decided on the contract
	// known, and answered with it, not with the row decoded.
	got, err := s.Update(ctx, "c1", func(c *contract.Contract) ([]currency.Op, error) { return nil, exchange.ErrNoChange })
	require.ErrorIs(t, err, exchange.ErrNoChange)
	assert.EqualValues(t, 4, s.taken.Load())
	assert.Equal(t, contract.StateSettled, got.State)
	assert.Equal(t, []int{0, 1, 2}, got.GPUs)
}
