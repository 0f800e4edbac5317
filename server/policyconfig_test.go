package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/internal/dectest"
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
		{PolicyConfig{Kind: "auction"}, `policy "auction": want reserve, utilisation or learning`},
		{PolicyConfig{Floor: "0.5"}, "policy.floor, ceiling, levels, epoch, max_epoch and seed are for the learning policy"},
		{PolicyConfig{MaxEpoch: time.Hour}, "are for the learning policy"},
		{PolicyConfig{Kind: "learning", P: [][]string{{"0", "0.1"}}, Epoch: time.Hour, MaxEpoch: time.Minute}, "max_epoch 1m0s is below epoch 1h0m0s"},
		{PolicyConfig{Kind: "learning", P: [][]string{{"0", "0.1"}}, Floor: "cheap"}, `policy.floor "cheap": want a multiplier`},
		{PolicyConfig{Kind: "learning", P: [][]string{{"0", "0.1"}}, Ceiling: "-2"}, `policy.ceiling "-2"`},
		{PolicyConfig{Kind: "learning", P: [][]string{{"0", "0.1"}}, Levels: 1}, "levels 1: want 2 to 64"},
		{PolicyConfig{Kind: "learning", P: [][]string{{"0", "0.1"}}, K: "1"}, "policy.k is for the utilisation policy"},
		{PolicyConfig{Kind: "learning"}, "the base price is zero"},
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

func TestPolicyConfigLearning(t *testing.T) {
	pol, err := PolicyConfig{Kind: "learning", P: [][]string{{"0", "0.002"}}, Floor: "0.25", Ceiling: "4", Levels: 5, Epoch: time.Hour, MaxEpoch: 6 * time.Hour, Seed: 9,
		Preempt: true, MaxTimeLimit: 2 * time.Hour}.Build()
	require.NoError(t, err)
	pre, ok := pol.(Preempting)
	require.True(t, ok, "%T", pol)
	l := LearnerOf(pol)
	require.NotNil(t, l, "the learner under the preemption")
	assert.Equal(t, "preempting learning", pre.String())
	var ms []string
	for _, m := range l.Multipliers() {
		ms = append(ms, m.String())
	}
	assert.Equal(t, []string{"0.25", "0.5", "1", "2", "4"}, ms)
	c := l.Config()
	assert.Equal(t, time.Hour, c.Epoch)
	assert.Equal(t, 6*time.Hour, c.MaxEpoch)
	assert.Equal(t, uint64(9), c.Seed)
	assert.Equal(t, 2*time.Hour, l.Current().MaxTimeLimit, "each level keeps the base's limits")
	assert.Equal(t, "0.002", l.Current().P[0].Y.String(), "it posts the base price until it first chooses")

	// A stack's learner is each server's own.
	a, b := ForServer(pol, "a", 1), ForServer(pol, "b", 1)
	assert.NotSame(t, LearnerOf(a), LearnerOf(b))
	assert.NotSame(t, l, LearnerOf(a))
	assert.NotEqual(t, LearnerOf(a).Config().Seed, LearnerOf(b).Config().Seed, "replicas explore apart")
	assert.Equal(t, LearnerOf(a).Config().Seed, LearnerOf(ForServer(pol, "a", 1)).Config().Seed, "the same server and run seed: the same")
	plain := Posted{P: contract.Flat(dectest.D("1"))}
	assert.Equal(t, Policy(plain), ForServer(plain, "a", 1), "a policy without state is shared as it is")
}
