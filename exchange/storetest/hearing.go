package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/protocol"
)

// testHearings: an instance's hearing replaces what it recorded before;
// Heard lists every instance's hearing recorded since a time, by
// instance, with its servers and contracts as written.
func testHearings(t *testing.T, open Opener) {
	s := open(t)
	ctx := context.Background()
	heard, err := s.Heard(ctx, t0.Add(-time.Hour))
	require.NoError(t, err)
	assert.Empty(t, heard)

	require.NoError(t, s.Hear(ctx, exchange.Hearing{Instance: "b", At: t0, Servers: map[string][]string{"gpu1": {"c-1", "c-2"}}}))
	require.NoError(t, s.Hear(ctx, exchange.Hearing{Instance: "a", At: t0.Add(-time.Minute), Servers: map[string][]string{"gpu2": nil}}))
	require.NoError(t, s.Hear(ctx, exchange.Hearing{Instance: "b", At: t0.Add(time.Second), Servers: map[string][]string{"gpu1": {"c-2"}, "gpu3": {}}}))

	heard, err = s.Heard(ctx, t0.Add(-2*time.Minute))
	require.NoError(t, err)
	require.Len(t, heard, 2)
	assert.Equal(t, "a", heard[0].Instance)
	assert.Equal(t, "b", heard[1].Instance)
	assert.WithinDuration(t, t0.Add(time.Second), heard[1].At, time.Microsecond, "b's last hearing (to the database's microsecond)")
	assert.Equal(t, []string{"c-2"}, heard[1].Servers["gpu1"], "b's last hearing replaced its first")
	assert.Contains(t, heard[1].Servers, "gpu3")
	assert.Empty(t, heard[1].Servers["gpu3"])

	heard, err = s.Heard(ctx, t0)
	require.NoError(t, err)
	require.Len(t, heard, 1, "a's is older")
	assert.Equal(t, "b", heard[0].Instance)
}

// testRecords: Records counts each server's contracts accepted since a
// time: all, those started (running or settled), those voided, those
// settled as lost; none accepted before.
func testRecords(t *testing.T, open Opener) {
	f := newFixture(t, open)
	f.wallet("alice", "1000")
	for _, id := range []string{"s0", "s1", "l0", "v0", "r0", "a0"} {
		f.open(newContract(id, "alice", t0))
	}
	f.open(newContract("old", "alice", t0.Add(-2*time.Hour)))
	for _, id := range []string{"s0", "s1", "l0"} {
		f.run(id, t0.Add(time.Second))
		_, err := f.s.Update(f.ctx, id, func(c *contract.Contract) ([]currency.Op, error) {
			ops := settle(c, "settle/"+id, "1", t0.Add(time.Minute))
			if id == "l0" {
				c.Reason = contract.ReasonServerLost
			}
			return ops, nil
		})
		require.NoError(t, err)
	}
	_, err := f.s.Update(f.ctx, "v0", func(c *contract.Contract) ([]currency.Op, error) {
		c.State, c.Reason, c.Refund, c.SettledAt = contract.StateVoided, contract.ReasonNotStarted, c.Terms.Prepayment, t0.Add(time.Minute)
		return []currency.Op{currency.Void{Key: "void/v0", Hold: "v0"}}, nil
	})
	require.NoError(t, err)
	f.run("r0", t0.Add(time.Second))

	got, err := f.s.Records(f.ctx, t0.Add(-time.Minute))
	require.NoError(t, err)
	assert.Equal(t, map[string]protocol.Record{server: {Accepted: 6, Started: 4, NotStarted: 1, Lost: 1}}, got)
	got, err = f.s.Records(f.ctx, t0.Add(time.Hour))
	require.NoError(t, err)
	assert.Empty(t, got)
}
