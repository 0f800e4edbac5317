package exchange

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/protocol"
)

// TestRouting: routing's one answer, read as a value on a registry and a
// manual clock, no House and no NATS: which servers an offer asks, in
// order (cheapest met first, free before preempting), which asks answer
// beside them, and why none where none may take it, built once (no_match
// and its kin may wait in the book; a counter-offer whose GPUs are gone
// may not).
func TestRouting(t *testing.T) {
	now := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	r := newRegistry(func() time.Time { return now }, pace{lostAfter: 10 * time.Second, base: time.Second})
	terms := func(gpus int, price string, job *contract.JobSpec) contract.Terms {
		if job == nil {
			job = &contract.JobSpec{Profile: &contract.Profile{Utilization: dectest.D("1"), Duration: time.Minute}}
		}
		t := contract.Terms{Currency: "CRED", GPUs: gpus, Class: contract.Class{Model: "H100"}, TimeLimit: 2 * time.Minute,
			P: contract.Flat(dectest.D(price)), Job: job}
		t.Prepayment = t.CappedPrepayment(2)
		return t
	}
	hello := func(free, preemptible int, price string, runs *protocol.Runs) protocol.Hello {
		h := protocol.Hello{Currency: "CRED", Free: free, Runs: runs, Heartbeat: contract.Duration(time.Second),
			Ask: &protocol.Ask{Preempts: preemptible > 0, Classes: []contract.ClassAsk{{Model: "H100", MemoryMiB: 81920, GPUs: 4,
				Free: free, Preemptible: preemptible, P: contract.Flat(dectest.D(price))}}}}
		for i := range 4 {
			h.GPUs = append(h.GPUs, contract.GPU{Index: i, Model: "H100", MemoryMiB: 81920})
		}
		return h
	}
	code := func(rt routing) bourse.Code { return bourse.ErrorCode(rt.refusal) }

	rt := r.routing(terms(1, "0.003", nil), "c-1", 8, "")
	assert.Empty(t, rt.ask)
	assert.Equal(t, bourse.ENoMatch, code(rt))
	assert.Contains(t, bourse.ErrorMessage(rt.refusal), "no server has registered with this exchange yet")
	assert.True(t, rt.mayWait, "an offer may wait for a server to come")

	synthetic := &protocol.Runs{Runner: protocol.RunnerSynthetic, Meter: contract.MeterSynthetic}
	r.update("cheap", hello(0, 4, "0.001", synthetic)) // room only in preemptible work
	r.update("mid", hello(4, 0, "0.002", synthetic))
	r.update("dear", hello(4, 0, "0.004", synthetic))
	r.update("proc", hello(4, 0, "0.001", &protocol.Runs{Runner: protocol.RunnerProcess, Meter: contract.MeterNVML, Programs: []string{"/bin/true"}}))

	t.Run("FreeBeforePreempting", func(t *testing.T) {
		rt := r.routing(terms(1, "0.005", nil), "c-1", 8, "")
		assert.NoError(t, rt.refusal)
		assert.Equal(t, []string{"mid", "dear", "cheap"}, rt.ask, "cheapest first, those with GPUs free before the one that would preempt")
		assert.Empty(t, rt.counter)
	})
	t.Run("AtMostK", func(t *testing.T) {
		rt := r.routing(terms(1, "0.005", nil), "c-1", 1, "")
		assert.Len(t, rt.ask, 1)
	})
	t.Run("AsksBeside", func(t *testing.T) {
		rt := r.routing(terms(1, "0.003", nil), "c-1", 8, "")
		assert.NoError(t, rt.refusal)
		assert.Equal(t, []string{"mid", "cheap"}, rt.ask)
		if assert.Len(t, rt.counter, 1) {
			assert.Equal(t, "dear", rt.counter[0].server, "the ask with room the offer does not meet counters beside")
		}
	})
	t.Run("BelowEveryAsk", func(t *testing.T) {
		rt := r.routing(terms(1, "0.0005", nil), "c-1", 8, "")
		assert.NoError(t, rt.refusal)
		assert.Empty(t, rt.ask, "no server asked")
		assert.True(t, rt.fits)
		assert.NotEmpty(t, rt.counter, "the asks answer")
	})
	t.Run("Program", func(t *testing.T) {
		rt := r.routing(terms(1, "0.003", &contract.JobSpec{Command: "/bin/true"}), "c-1", 8, "")
		assert.Equal(t, []string{"proc"}, rt.ask, "the one server that runs it")
		rt = r.routing(terms(1, "0.003", &contract.JobSpec{Command: "/bin/false"}), "c-1", 8, "")
		assert.Empty(t, rt.ask)
		assert.Equal(t, bourse.EJobUnsupported, code(rt), "synthetic servers and a list without it: %v", rt.refusal)
		assert.Contains(t, bourse.ErrorMessage(rt.refusal), "cheap: this server runs synthetic jobs only", "the servers' own words, from contract.Runs")
		assert.True(t, rt.mayWait)
	})
	t.Run("TooMany", func(t *testing.T) {
		rt := r.routing(terms(8, "0.005", nil), "c-1", 8, "")
		assert.Equal(t, bourse.ENoMatch, code(rt))
		assert.Contains(t, bourse.ErrorMessage(rt.refusal), "no live server has 8 H100 GPUs for CRED")
		assert.True(t, rt.mayWait)
	})
	t.Run("Named", func(t *testing.T) {
		low := terms(1, "0.001", nil)
		low.Server = "dear"
		rt := r.routing(low, "c-1", 8, "")
		assert.Equal(t, []string{"dear"}, rt.ask, "an offer naming its server asks it, its ask met or not")
		low.Server = "nobody"
		rt = r.routing(low, "c-1", 8, "")
		assert.Equal(t, bourse.ENoMatch, code(rt))
		assert.Equal(t, "terms.server", refusalField(rt.refusal))
	})
	t.Run("AskCounterGone", func(t *testing.T) {
		full := terms(1, "0.002", nil)
		full.Server = "cheap" // no GPU free; a guaranteed offer at the ask would preempt
		full.Preemptible = true
		rt := r.routing(full, "c-1", 8, askCounterPrefix+"x")
		assert.Equal(t, bourse.ECapacityGone, code(rt))
		assert.False(t, rt.mayWait, "a counter-offer's GPUs gone do not wait")
		assert.Empty(t, rt.ask)
		rt = r.routing(full, "c-1", 8, "a-server's-own")
		assert.NoError(t, rt.refusal, "a server's own counter-offer: the server says")
		assert.Equal(t, []string{"cheap"}, rt.ask)
	})

	now = now.Add(11 * time.Second) // all silent past lostAfter
	rt = r.routing(terms(1, "0.005", nil), "c-1", 8, "")
	assert.Equal(t, bourse.ENoMatch, code(rt))
	assert.Contains(t, bourse.ErrorMessage(rt.refusal), "no server has registered", "none live")
}

func refusalField(err error) string {
	var e *bourse.Error
	if errors.As(err, &e) {
		return e.Field
	}
	return ""
}
