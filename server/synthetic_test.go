package server

import (
	"context"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/internal/clocktest"
	"github.com/bourse/bourse/internal/dectest"
)

func TestSyntheticUsage(t *testing.T) {
	for _, tc := range []struct {
		name            string
		g               int
		util            string
		length, elapsed time.Duration
		u, s, energy    string
		tt              time.Duration
	}{
		{"half busy", 2, "0.5", 10 * time.Second, 4 * time.Second, "4", "2", "1200", 4 * time.Second},
		{"past the end", 2, "0.5", 10 * time.Second, 15 * time.Second, "10", "2", "3000", 10 * time.Second},
		{"no profile", 3, "1", 0, 90 * time.Second, "270", "3", "81000", 90 * time.Second},
		{"fraction", 1, "0.37", time.Minute, 1500 * time.Millisecond, "0.555", "1", "166.5", 1500 * time.Millisecond},
		{"one nanosecond", 4, "0.25", time.Hour, 1, "0.000000001", "4", "0.0000003", 1},
		{"idle", 8, "0", time.Hour, time.Minute, "0", "8", "0", time.Minute},
		{"not started", 1, "1", time.Hour, 0, "0", "1", "0", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := syntheticUsage(tc.g, dectest.D(tc.util), tc.length, tc.elapsed, decimal.NewFromInt(defaultWatts))
			assert.True(t, dectest.D(tc.u).Equal(m.U), "u = %s", m.U)
			assert.True(t, dectest.D(tc.s).Equal(m.S), "s = %s", m.S)
			assert.True(t, dectest.D(tc.energy).Equal(m.EnergyJ), "energy = %s", m.EnergyJ)
			assert.Equal(t, tc.tt, m.T)
		})
	}
}

func startSynthetic(t *testing.T, r *Synthetic, gpus int, p *contract.Profile) Job {
	t.Helper()
	a := Assignment{Contract: "c1", Job: &contract.JobSpec{Profile: p}}
	for i := range gpus {
		a.GPUs = append(a.GPUs, h100(i))
	}
	j, err := r.Start(context.Background(), a)
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Stop(context.Background(), contract.ReasonKilled) })
	return j
}

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func measure(t *testing.T, j Job) Measurement {
	t.Helper()
	m, err := j.Measure()
	require.NoError(t, err)
	return m
}

func TestSyntheticStop(t *testing.T) {
	c := clocktest.New(now)
	j := startSynthetic(t, &Synthetic{Now: c.Now}, 2, &contract.Profile{Utilization: dectest.D("0.75"), Duration: time.Hour})
	c.Advance(4 * time.Second)
	m := measure(t, j)
	assert.True(t, dectest.D("6").Equal(m.U), "u = %s", m.U) // 2 · 0.75 · 4
	assert.Equal(t, 4*time.Second, m.T)
	assert.Nil(t, m.ExitCode)

	require.NoError(t, j.Stop(context.Background(), contract.ReasonKilled))
	c.Advance(time.Minute)
	m = measure(t, j)
	assert.True(t, dectest.D("6").Equal(m.U), "stopped: u = %s", m.U)
	assert.Equal(t, 4*time.Second, m.T)
	assert.Nil(t, m.ExitCode, "a stopped job did not exit by itself")
	assert.True(t, closed(j.Done()), "done")
	require.NoError(t, j.Stop(context.Background(), contract.ReasonKilled), "a second stop does nothing")
}

func TestSyntheticCompletes(t *testing.T) {
	c := clocktest.New(now)
	j := startSynthetic(t, &Synthetic{Now: c.Now, Watts: dectest.D("100")}, 1, &contract.Profile{Utilization: dectest.D("0.5"), Duration: time.Hour})
	c.Advance(2 * time.Hour)
	m := measure(t, j)
	assert.True(t, dectest.D("1800").Equal(m.U), "u = %s", m.U) // 1 · 0.5 · 3600
	assert.True(t, dectest.D("180000").Equal(m.EnergyJ), "energy = %s", m.EnergyJ)
	assert.Equal(t, time.Hour, m.T)
	require.NotNil(t, m.ExitCode)
	assert.Equal(t, 0, *m.ExitCode)
	assert.True(t, closed(j.Done()), "done")
}

// TestSyntheticDoneOnTime: on an injected clock the job is done the moment
// its profile runs out, before anything measures it, and charges its
// whole profile; a moment earlier it is not.
func TestSyntheticDoneOnTime(t *testing.T) {
	c := clocktest.New(now)
	j := startSynthetic(t, &Synthetic{Now: c.Now}, 2, &contract.Profile{Utilization: dectest.D("1"), Duration: time.Minute})
	c.Advance(time.Minute - time.Nanosecond)
	assert.False(t, closed(j.Done()), "not yet")
	c.Advance(time.Nanosecond)
	assert.True(t, closed(j.Done()), "done at its length")
	c.Advance(time.Hour)
	m := measure(t, j)
	require.NotNil(t, m.ExitCode)
	assert.True(t, dectest.D("120").Equal(m.U), "u = %s", m.U)
}

func TestSyntheticNoProfile(t *testing.T) {
	c := clocktest.New(now)
	j := startSynthetic(t, &Synthetic{Now: c.Now}, 2, nil)
	c.Advance(10 * time.Hour)
	m := measure(t, j)
	assert.True(t, dectest.D("72000").Equal(m.U), "fully busy until stopped: u = %s", m.U)
	assert.False(t, closed(j.Done()), "done")
}

func TestSyntheticRealTimer(t *testing.T) {
	j := startSynthetic(t, &Synthetic{}, 1, &contract.Profile{Utilization: dectest.D("1"), Duration: 20 * time.Millisecond})
	select {
	case <-j.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the job did not end")
	}
	m := measure(t, j)
	assert.Equal(t, 20*time.Millisecond, m.T)
	assert.True(t, dectest.D("0.02").Equal(m.U), "u = %s", m.U)
	require.NotNil(t, m.ExitCode)
}
