package process_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/server/process"
)

// TestUnmetered: a runner without a meter refuses every job, at the offer
// (Check) and at the start, with unmetered and a message that says why
// and names the fallback its operator may choose.
func TestUnmetered(t *testing.T) {
	r, _ := newRunner(t, func(c *process.Config) { c.Meter, c.NoMeter = nil, "no NVIDIA driver (NVML: library not found)" })
	if got := r.Meter(); got != "" {
		t.Errorf("Meter() = %q without a meter", got)
	}
	job := helperJob("exit", "0")
	err := r.Check(job)
	if bourse.ErrorCode(err) != bourse.EUnmetered {
		t.Fatalf("Check = %v, want unmetered", err)
	}
	msg := bourse.ErrorMessage(err)
	for _, want := range []string{"no NVIDIA driver (NVML: library not found)", "meter_fallback: full_use", "U = GPUs × T"} {
		if !strings.Contains(msg, want) {
			t.Errorf("refusal %q lacks %q", msg, want)
		}
	}
	if _, err := r.Start(context.Background(), server.Assignment{Contract: "c1", Job: job, GPUs: gpus(0)}); bourse.ErrorCode(err) != bourse.EUnmetered {
		t.Errorf("Start = %v, want unmetered", err)
	}
}

// TestFullUse: the full-use meter charges every GPU busy for the job's
// whole wall time, U = S·T exactly, while it runs and at its end, and the
// runner says that is how it measures.
func TestFullUse(t *testing.T) {
	r, _ := newRunner(t, nil)
	if got := r.Meter(); got != contract.MeterFullUse {
		t.Errorf("Meter() = %q, want %q", got, contract.MeterFullUse)
	}
	j := start(t, r, server.Assignment{Contract: "c1", Job: helperJob("sleep"), GPUs: gpus(0, 2, 3)})
	time.Sleep(30 * time.Millisecond)
	full := func(m server.Measurement) decimal.Decimal {
		return decimal.NewFromInt(3).Mul(decimal.New(int64(m.T), -9))
	}
	m, err := j.Measure()
	if err != nil || !m.U.Equal(full(m)) || m.T <= 0 {
		t.Errorf("running: %+v, %v; want U = 3·T", m, err)
	}
	if err := j.Stop(context.Background(), contract.ReasonKilled); err != nil {
		t.Fatal(err)
	}
	m, _ = j.Measure()
	if !m.U.Equal(full(m)) || !m.EnergyJ.IsZero() {
		t.Errorf("ended: %+v; want U = 3·T and no energy", m)
	}
	again, _ := j.Measure()
	if !again.U.Equal(m.U) || again.T != m.T {
		t.Errorf("the final measurement moved: %+v then %+v", m, again)
	}
}
