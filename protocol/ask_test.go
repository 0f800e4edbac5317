package protocol_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/protocol"
)

// TestRoomCountsRunsOutbid: a guaranteed offer has room on a preempting
// server in the free GPUs and in the preemptible runs it outbids at full
// use, not in those that pay as much as it or more; a preemptible offer,
// or one to a server that does not preempt, in the free GPUs alone; a
// server of old that names no runs, in all its preemptible GPUs.
func TestRoomCountsRunsOutbid(t *testing.T) {
	c := protocol.ClassAsk{Model: "H100", GPUs: 8, Free: 1, Preemptible: 5, PreemptibleRuns: []protocol.PreemptibleRun{
		{GPUs: 2, Rate: dectest.D("0.002")}, {GPUs: 3, Rate: dectest.D("0.004")}}}
	offer := func(price string, preemptible bool) contract.Terms {
		return contract.Terms{GPUs: 1, TimeLimit: time.Hour, P: contract.Flat(dectest.D(price)), Preemptible: preemptible}
	}
	a := &protocol.Ask{Preempts: true, Classes: []protocol.ClassAsk{c}}
	assert.Equal(t, 1, a.Room(c, offer("0.002", false)), "as much as the cheapest run: outbids none")
	assert.Equal(t, 3, a.Room(c, offer("0.003", false)), "outbids the 0.002 run")
	assert.Equal(t, 6, a.Room(c, offer("0.005", false)), "outbids both")
	assert.Equal(t, 1, a.Room(c, offer("0.005", true)), "a preemptible offer preempts nothing")
	assert.Equal(t, 1, (&protocol.Ask{Classes: a.Classes}).Room(c, offer("0.005", false)), "a server that does not preempt")
	old := c
	old.PreemptibleRuns = nil
	assert.Equal(t, 6, a.Room(old, offer("0.001", false)), "a server of old: every preemptible GPU counts")
}

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
