package agent_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/server/agent"
)

func newLearner(t *testing.T) *server.Learning {
	l, err := server.NewLearning(server.LearningConfig{Base: server.Posted{P: contract.Flat(dectest.D("0.001"))}, Epoch: time.Second, Seed: 7})
	require.NoError(t, err)
	return l
}

// started sums what a learner believes of all its levels.
func started(l *server.Learning) (starts, ended int) {
	for _, lv := range l.Beliefs().Levels {
		starts += lv.Starts
		ended += lv.Ended
	}
	return starts, ended
}

// TestLearningSurvivesRestart: what a learning policy learned (a contract
// won at the level it posted, what it earned, its epochs) is on disk
// beside the bookings when the agent stops, and a restarted agent's
// learner starts from it; a state it cannot read leaves it learning
// afresh, and the agent runs.
func TestLearningSurvivesRestart(t *testing.T) {
	x := newExchange(t, setup{})
	dir := t.TempDir()
	first := newLearner(t)
	ag := x.startAgent("gpu1", agent.Config{OutboxDir: dir, Policy: first})
	assert.Equal(t, "learning", x.waitBeat(func(protocol.Hello) bool { return true }).Policy)

	// Dearer than any level of the grid (at most 4 × 0.001): accepted at
	// whatever level is posted.
	tm := terms(1, 10*time.Second, "0.1", "1", "1", 300*time.Millisecond)
	require.True(t, x.offer("gpu1", protocol.ServerOffer{Offer: "o1", Terms: tm}).Accept)
	rs := x.readings("gpu1", "c1")
	_, err := x.start("gpu1", "o1", "c1", tm)
	require.NoError(t, err)
	assert.Equal(t, contract.ReasonCompleted, rs.final(0).Reason)
	require.Eventually(t, func() bool {
		_, ended := started(first)
		return ended == 1 && first.Epochs() >= 2
	}, 5*time.Second, 20*time.Millisecond, "the learner hears of the contract's end, and chooses again each second")
	require.NoError(t, ag.shutdown(t))
	saved := first.Beliefs()
	_, err = os.Stat(filepath.Join(dir, "learning.json"))
	require.NoError(t, err, "the learner's state is beside the bookings")

	second := newLearner(t)
	ag = x.startAgent("gpu1", agent.Config{OutboxDir: dir, Policy: second})
	starts, ended := started(second)
	assert.Equal(t, 1, starts, "the restarted learner knows the contract its predecessor won")
	assert.Equal(t, 1, ended)
	b := second.Beliefs()
	assert.GreaterOrEqual(t, b.Epochs, saved.Epochs, "and carries on from its epochs")
	var revenue string
	for _, lv := range b.Levels {
		if lv.Ended == 1 {
			revenue = lv.Revenue.String()
		}
	}
	assert.Equal(t, "0.03", revenue, "what it earned: 0.3 GPU-seconds at 0.1, as the terms charge")
	require.NoError(t, ag.shutdown(t))

	require.NoError(t, os.WriteFile(filepath.Join(dir, "learning.json"), []byte(`{"version": 99}`), 0o600))
	third := newLearner(t)
	x.startAgent("gpu1", agent.Config{OutboxDir: dir, Policy: third})
	starts, _ = started(third)
	assert.Zero(t, starts, "a state it cannot read is not believed: the learner starts afresh")
}
