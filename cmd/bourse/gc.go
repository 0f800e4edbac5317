package main

import (
	"os"
	"runtime/debug"
)

// gcPercent is the garbage collector's target for the long-running
// commands (exchange, server, demo) unless GOGC says otherwise. Their live
// heaps are small and their allocation rate high (JSON per message), so
// Go's default of 100 collects many times a second; 400 trades a few
// megabytes for a fifth less CPU under load (docs/benchmarks.md).
const gcPercent = 400

func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
}
