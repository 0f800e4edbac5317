package contract_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/internal/dectest"
)

// The states' order and which of them end a contract: the one rule every
// package asks.
func TestStates(t *testing.T) {
	order := []contract.State{"", contract.StateAccepted, contract.StateRunning, contract.StateSettled}
	for i := range order {
		for j := range order {
			assert.Equal(t, i > j, order[i].After(order[j]), "%q after %q", order[i], order[j])
		}
	}
	assert.False(t, contract.StateVoided.After(contract.StateSettled), "settled and voided are both last")
	for s, ended := range map[contract.State]bool{contract.StateAccepted: false, contract.StateRunning: false,
		contract.StateSettled: true, contract.StateVoided: true, "": false} {
		assert.Equal(t, ended, s.Ended(), "%q", s)
		assert.Equal(t, !ended && s != "", contract.Contract{State: s}.HoldsEscrow(), "%q", s)
	}
}

// A contract's changes of state, each a pure change of the record.
func TestLifecycle(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	terms := contract.Terms{Currency: "CRED", GPUs: 1, TimeLimit: time.Hour, Prepayment: dectest.D("10"), P: contract.Flat(dectest.D("0.001"))}
	c := contract.Contract{ID: "c-1", Terms: terms, State: contract.StateAccepted, StartDeadline: t0.Add(time.Minute)}

	assert.False(t, c.Stale(t0, t0.Add(-time.Minute)), "accepted, within its start deadline")
	assert.True(t, c.Stale(t0.Add(2*time.Minute), t0), "accepted, past its start deadline")

	assert.True(t, c.Start(contract.Began{At: t0, GPUs: []int{3}, Meter: contract.MeterSynthetic}, t0))
	assert.Equal(t, contract.StateRunning, c.State)
	assert.False(t, c.Start(contract.Began{At: t0, GPUs: []int{3}, Meter: contract.MeterSynthetic}, t0), "a start again changes nothing")

	c.Record(contract.Reading{Contract: "c-1", Seq: 1, U: dectest.D("60"), T: contract.Duration(time.Minute), S: dectest.D("1"), At: t0.Add(time.Minute)}, t0.Add(time.Minute))
	assert.False(t, c.Stale(t0.Add(time.Minute), t0), "heard from since silentSince")
	assert.True(t, c.Stale(t0.Add(5*time.Minute), t0.Add(2*time.Minute)), "silent since before silentSince")

	assert.True(t, c.AskStop(contract.ReasonSuspended, t0.Add(2*time.Minute), 30*time.Second))
	assert.True(t, c.AskStop(contract.ReasonKilled, t0.Add(3*time.Minute), time.Hour), "a kill after a suspend")
	assert.Equal(t, t0.Add(2*time.Minute+30*time.Second), c.Stop.By, "its bound unchanged")
	assert.False(t, c.AskStop(contract.ReasonKilled, t0.Add(3*time.Minute), time.Hour))
	assert.True(t, c.StopDue(c.Stop.By))
	assert.True(t, c.Stale(c.Stop.By, t0), "a stop due is stale")

	c.MarkStuck(t0, "boom", func(n int) time.Duration { return time.Duration(n) * time.Second })
	c.MarkStuck(t0.Add(time.Second), "boom again", func(n int) time.Duration { return time.Duration(n) * time.Second })
	assert.Equal(t, contract.Stuck{Since: t0, Attempts: 2, Retry: t0.Add(3 * time.Second), Error: "boom again"}, *c.Stuck)

	st, err := c.Settle(contract.ReasonKilled, 2, t0.Add(4*time.Minute))
	assert.NoError(t, err)
	assert.Equal(t, "0.06", st.Charge.String())
	assert.True(t, c.Ended())
	assert.True(t, c.Charge.Add(c.Refund).Equal(terms.Prepayment))

	v := contract.Contract{Terms: terms, State: contract.StateAccepted}
	v.Void(contract.ReasonNotStarted, t0)
	assert.Equal(t, contract.StateVoided, v.State)
	assert.True(t, v.Refund.Equal(terms.Prepayment))
}

// How many GPUs of a list fit a class, and whether enough do.
func TestFitIn(t *testing.T) {
	gpus := []contract.GPU{{Index: 0, Model: "H100", MemoryMiB: 81920}, {Index: 1, Model: "h100", MemoryMiB: 40960}, {Index: 2, Model: "A100", MemoryMiB: 81920}}
	assert.Equal(t, 2, contract.Class{Model: "H100"}.Count(gpus))
	assert.Equal(t, 1, contract.Class{Model: "H100", MinMemoryMiB: 80000}.Count(gpus))
	assert.Equal(t, 3, contract.Class{}.Count(gpus))
	assert.True(t, contract.Terms{GPUs: 2, Class: contract.Class{Model: "H100"}}.FitIn(gpus))
	assert.False(t, contract.Terms{GPUs: 3, Class: contract.Class{Model: "H100"}}.FitIn(gpus))
}
