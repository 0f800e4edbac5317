package server

import (
	"fmt"

	"github.com/bourse/bourse/contract"
)

// What measures process jobs where NVML cannot (MeterChoice.Fallback):
// nothing, so that they are refused, or FullUse, charged as if every
// GPU were busy.
const (
	FallbackNone    = "none"
	FallbackFullUse = string(contract.MeterFullUse)
)

// FullUseHint names the fallback an operator may choose where NVML cannot
// meter, in the words of bourse server's configuration: refusals and the
// server's start line quote it.
const FullUseHint = "meter_fallback: full_use (--meter-fallback full_use) charges U = GPUs × T, as if every GPU were busy"

// MeterChoice is what chooses the meter of a server's jobs (JobMeter).
type MeterChoice struct {
	// Runner is the server's runner: synthetic (or empty), process or
	// container.
	Runner string
	// Fallback is the operator's for process jobs where NVML is not to
	// be had: FallbackNone (or empty) or FallbackFullUse.
	Fallback string
	// NVML is the NVML meter, nil where it did not open; NoNVML says
	// why.
	NVML   Meter
	NoNVML string
	GPUs   int // the server's GPUs, for the line
}

// JobMeter chooses what measures the jobs, and the line the server says
// at its start to tell so. The synthetic runner measures its own jobs; a
// process or container job is measured by NVML, or where NVML is not to
// be had by the fallback the operator chose, or not run at all (a nil
// meter: the runner then refuses every job, naming the fallback). The
// line is the one place an operator sees this before a client does.
func JobMeter(c MeterChoice) (Meter, string, error) {
	switch c.Fallback {
	case "", FallbackNone, FallbackFullUse:
	default:
		return nil, "", fmt.Errorf("meter_fallback %q: want %s or %s", c.Fallback, FallbackNone, FallbackFullUse)
	}
	if c.Runner != "process" && c.Runner != "container" {
		line := "meter: synthetic: jobs run no process and consume the utilisation profile of their terms"
		if c.NoNVML != "" {
			line += fmt.Sprintf(" (%d GPUs as declared: %s)", c.GPUs, c.NoNVML)
		}
		return nil, line, nil
	}
	jobs := "process jobs"
	if c.Runner == "container" {
		jobs = "containers"
	}
	if c.NVML != nil {
		return c.NVML, fmt.Sprintf("meter: nvml: the SM utilisation of each job's processes on %d GPUs NVML found", c.GPUs), nil
	}
	if c.Fallback == FallbackFullUse {
		return FullUse{}, fmt.Sprintf("meter: full_use: %s, so %s are charged U = GPUs × T, as if every GPU were busy (meter_fallback: full_use)", c.NoNVML, jobs), nil
	}
	return nil, fmt.Sprintf("meter: none: %s, so %s are refused; %s", c.NoNVML, jobs, FullUseHint), nil
}
