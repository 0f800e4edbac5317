package protocol

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/bourse/bourse/contract"
)

// TestHistory: a contract's events are told in order, from its record,
// and only those that happened.
func TestHistory(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	v := ContractView{ID: "c-1", Server: "atlas", State: contract.StateSettled, Reason: contract.ReasonKilled,
		AcceptedAt: t0, StartDeadline: t0.Add(15 * time.Second), StartedAt: t0.Add(time.Second), GPUs: []int{3}, Model: "H100", Meter: contract.MeterNVML,
		Stop:      &contract.Stop{Reason: contract.ReasonKilled, At: t0.Add(time.Minute), By: t0.Add(time.Minute + 15*time.Second)},
		SettledAt: t0.Add(time.Minute + 2*time.Second)}
	var got []string
	for _, h := range History(v) {
		got = append(got, h.At.Sub(t0).String()+" "+h.What)
	}
	assert.Equal(t, []string{
		"0s accepted by atlas; prepayment escrowed; start by 2026-12-01T12:00:15Z",
		"1s started on atlas's GPUs [3] (H100), metered by nvml",
		"1m0s killed asked; its server's readings count until 2026-12-01T12:01:15Z",
		"1m2s settled (killed)",
	}, got)
	assert.Len(t, History(ContractView{State: contract.StateAccepted, AcceptedAt: t0}), 1, "only what happened")
}
