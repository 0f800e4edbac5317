package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/exchange"
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
