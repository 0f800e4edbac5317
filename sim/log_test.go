package sim_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/sim/audit"
)

// TestContractLogAudits: the contract log carries what prices each
// contract, so an implementation of docs/pricing.md that shares no code
// with the House (package audit) prices every settled contract from the
// log alone to the same charge and refund, and the log's charges sum to
// the run's revenue.
func TestContractLogAudits(t *testing.T) {
	var log bytes.Buffer
	m := demoSimulation(t, 3, 2000, &log)
	r, err := m.Run(context.Background())
	require.NoError(t, err)
	rep, err := audit.Check(bytes.NewReader(log.Bytes()))
	require.NoError(t, err)
	require.True(t, rep.OK(), "%v", rep.Mismatches)
	cs, err := m.Contracts(context.Background())
	require.NoError(t, err)
	settled, voided := 0, 0
	for _, c := range cs {
		switch c.State {
		case contract.StateSettled:
			settled++
		case contract.StateVoided:
			voided++
		}
	}
	assert.Equal(t, settled, rep.Settled, "every settlement is in the log, priced again")
	assert.Equal(t, voided, rep.Voided)
	assert.Equal(t, r.Summary.Contracts, rep.Accepted)
	assert.Zero(t, rep.Open, "a finished run leaves no contract open")
	assert.InDelta(t, dectest.D(rep.Charged).InexactFloat64(), r.Summary.Revenue, 1e-6, "revenue is the log's charges (summed in float64)")
	t.Logf("%d lines, %d settled and priced again, %s charged", rep.Lines, rep.Settled, rep.Charged)
}
