package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPolicyConfigBuild(t *testing.T) {
	pol, err := PolicyConfig{Kind: "utilisation", P: [][]string{{"0", "0.1"}}, K: "2", Preempt: true,
		Bookings: &BookingsConfig{MaxAhead: time.Hour}, FairUse: FairUseConfig{MaxRunning: 2}}.Build()
	require.NoError(t, err)
	fu, ok := pol.(FairUse)
	require.True(t, ok, "fair use has the last word: %T", pol)
	b, ok := fu.Base.(Bookings)
	require.True(t, ok, "%T", fu.Base)
	pre, ok := b.Base.(Preempting)
	require.True(t, ok, "%T", b.Base)
	u, ok := pre.Base.(Utilization)
	require.True(t, ok, "%T", pre.Base)
	assert.True(t, u.Base.P.Equal(Posted{P: curve("0", "0.1")}.P))

	plain, err := PolicyConfig{}.Build()
	require.NoError(t, err)
	assert.Equal(t, Posted{}, plain)

	for _, c := range []struct {
		cfg  PolicyConfig
		want string
	}{
		{PolicyConfig{Kind: "auction"}, `policy "auction": want reserve or utilisation`},
		{PolicyConfig{Kind: "utilisation", K: "lots"}, `policy.k "lots": want a decimal number`},
		{PolicyConfig{K: "1"}, "policy.k is for the utilisation policy"},
		{PolicyConfig{P: [][]string{{"1", "x"}}}, "policy.p"},
		{PolicyConfig{FairUse: FairUseConfig{MaxRunning: -1}}, "policy:"},
	} {
		_, err := c.cfg.Build()
		require.Error(t, err)
		assert.Contains(t, err.Error(), c.want)
	}
}
