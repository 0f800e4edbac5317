package main

import (
	"fmt"

	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/server/nvmlmeter"
)

// jobMeter is server.JobMeter for this configuration: what measures the
// jobs, and the line the server prints at its start to say so. nv is
// NVML's meter, nil where it did not open (noNVML says why).
func (c *serverConfig) jobMeter(nv *nvmlmeter.Meter, noNVML string, gpus int) (server.Meter, string, error) {
	choice := server.MeterChoice{Runner: c.Runner.Kind, Fallback: c.MeterFallback, NoNVML: noNVML, GPUs: gpus}
	if nv != nil { // a nil *Meter in the interface would read as a meter
		choice.NVML = nv
	}
	m, line, err := server.JobMeter(choice)
	if err != nil {
		return nil, "", fmt.Errorf("server config: %w", err)
	}
	return m, line, nil
}
