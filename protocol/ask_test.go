package protocol_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/protocol"
)

// TestAskRunsChecked: an ask's preemptible runs are of a GPU or more,
// cheapest first, and hold exactly its preemptible GPUs.
func TestAskRunsChecked(t *testing.T) {
	gpus := []contract.GPU{{Index: 0, Model: "H100"}, {Index: 1, Model: "H100"}, {Index: 2, Model: "H100"}}
	ask := func(runs ...protocol.PreemptibleRun) *protocol.Ask {
		return &protocol.Ask{Classes: []protocol.ClassAsk{{Model: "H100", GPUs: 3, Free: 0, Preemptible: 3, PreemptibleRuns: runs}}}
	}
	run := func(n int, rate string) protocol.PreemptibleRun {
		return protocol.PreemptibleRun{GPUs: n, Rate: dectest.D(rate)}
	}
	require.NoError(t, ask().Check(gpus))
	require.NoError(t, ask(run(1, "0.001"), run(2, "0.003")).Check(gpus))
	for name, a := range map[string]*protocol.Ask{
		"dearest first":  ask(run(2, "0.003"), run(1, "0.001")),
		"no GPUs":        ask(run(0, "0.001"), run(3, "0.003")),
		"fewer GPUs":     ask(run(1, "0.001"), run(1, "0.003")),
		"negative rate":  ask(run(3, "-0.001")),
		"more runs than": ask(run(1, "0.001"), run(1, "0.001"), run(1, "0.001"), run(1, "0.002")),
	} {
		err := a.Check(gpus)
		require.Error(t, err, name)
		assert.Equal(t, bourse.EInvalid, bourse.ErrorCode(err), name)
		var be *bourse.Error
		require.ErrorAs(t, err, &be, name)
		assert.Contains(t, be.Field, "preemptible_runs", name)
	}
}
