package main

import (
	"fmt"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/server/nvmlmeter"
	"github.com/bourse/bourse/server/process"
)

// Values of meter_fallback: what measures process jobs where NVML cannot.
const (
	fallbackNone    = "none"
	fallbackFullUse = string(contract.MeterFullUse)
)

// jobMeter chooses what measures the jobs, and the line the server prints
// at its start to say so. The synthetic runner measures its own jobs; a
// process job is measured by NVML, or where NVML is not to be had
// (noNVML says why) by the fallback the operator chose, or not run at all
// (a nil meter: the process runner then refuses every job, naming the
// fallback). The line is the one place an operator sees this before a
// client does.
func (c *serverConfig) jobMeter(nv *nvmlmeter.Meter, noNVML string, gpus int) (server.Meter, string, error) {
	switch c.MeterFallback {
	case "", fallbackNone, fallbackFullUse:
	default:
		return nil, "", fmt.Errorf("server config: meter_fallback %q: want %s or %s", c.MeterFallback, fallbackNone, fallbackFullUse)
	}
	if c.Runner.Kind != "process" && c.Runner.Kind != "container" {
		line := "meter: synthetic: jobs run no process and consume the utilisation profile of their terms"
		if noNVML != "" {
			line += fmt.Sprintf(" (%d GPUs as declared: %s)", gpus, noNVML)
		}
		return nil, line, nil
	}
	jobs := "process jobs"
	if c.Runner.Kind == "container" {
		jobs = "containers"
	}
	if nv != nil {
		return nv, fmt.Sprintf("meter: nvml: the SM utilisation of each job's processes on %d GPUs NVML found", gpus), nil
	}
	if c.MeterFallback == fallbackFullUse {
		return server.FullUse{}, fmt.Sprintf("meter: full_use: %s, so %s are charged U = GPUs × T, as if every GPU were busy (meter_fallback: full_use)", noNVML, jobs), nil
	}
	return nil, fmt.Sprintf("meter: none: %s, so %s are refused; %s", noNVML, jobs, process.FullUseHint), nil
}
