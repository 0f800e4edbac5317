package main

import (
	"github.com/bourse/bourse/server/process"
	"github.com/bourse/bourse/server/spool"
)

// outputSpool sends the process runner's jobs' output to their clients:
// from the runner's output directory, written there first, so that it
// outlives outages of NATS and restarts of the server.
func (c *serverConfig) outputSpool(h *process.Host) *spool.Config {
	return &spool.Config{Dir: h.OutputDir(), LogCap: h.OutputCap(), ResultsCap: c.Runner.ResultsCap, Keep: c.Runner.OutputKeep}
}
