package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// cpuProfile writes a CPU profile of the process to path until the
// returned stop is called (nothing where path is ""): for bourse sim's
// runs, and for a bourse exchange under a benchmark's load, whose CPU
// per contract is a goal (docs/benchmarks.md) and is read from a
// profile of the exchange's process alone.
func cpuProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
