package contract_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/internal/dectest"
)

// TestRoomCountsRunsOutbid: a guaranteed offer has room on a preempting
// server in the free GPUs and in the preemptible runs it outbids at full
// use, not in those that pay as much as it or more; a preemptible offer,
// or one to a server that does not preempt, in the free GPUs alone; a
// server of old that names no runs, in all its preemptible GPUs.
func TestRoomCountsRunsOutbid(t *testing.T) {
	c := contract.ClassAsk{Model: "H100", GPUs: 8, Free: 1, Preemptible: 5, PreemptibleRuns: []contract.PreemptibleRun{
		{GPUs: 2, Rate: dectest.D("0.002")}, {GPUs: 3, Rate: dectest.D("0.004")}}}
	offer := func(price string, preemptible bool) contract.Terms {
		return contract.Terms{GPUs: 1, TimeLimit: time.Hour, P: contract.Flat(dectest.D(price)), Preemptible: preemptible}
	}
	a := &contract.Ask{Preempts: true, Classes: []contract.ClassAsk{c}}
	assert.Equal(t, 1, a.Room(c, offer("0.002", false)), "as much as the cheapest run: outbids none")
	assert.Equal(t, 3, a.Room(c, offer("0.003", false)), "outbids the 0.002 run")
	assert.Equal(t, 6, a.Room(c, offer("0.005", false)), "outbids both")
	assert.Equal(t, 1, a.Room(c, offer("0.005", true)), "a preemptible offer preempts nothing")
	assert.Equal(t, 1, (&contract.Ask{Classes: a.Classes}).Room(c, offer("0.005", false)), "a server that does not preempt")
	old := c
	old.PreemptibleRuns = nil
	assert.Equal(t, 6, a.Room(old, offer("0.001", false)), "a server of old: every preemptible GPU counts")
}
