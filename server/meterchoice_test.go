package server

import (
	"strings"
	"testing"

	"github.com/bourse/bourse/contract"
)

// nvmlKind stands for NVML's meter: a Meter of kind nvml.
type nvmlKind struct{ Meter }

func (nvmlKind) Kind() contract.Meter { return contract.MeterNVML }

// TestJobMeter: the server's start line says, in one line, what measures
// its jobs: the synthetic meter with the synthetic runner only; NVML for
// process and container jobs where it opened; where it did not, the
// fallback the operator chose, or none, which refuses those jobs and
// names the fallback.
func TestJobMeter(t *testing.T) {
	const noLib = "no NVIDIA driver (NVML: library not found)"
	for _, tt := range []struct {
		name string
		c    MeterChoice
		kind contract.Meter // "" for no meter
		line string
	}{
		{"Synthetic", MeterChoice{Runner: "synthetic", NoNVML: noLib, GPUs: 2}, "", "meter: synthetic: jobs run no process and consume the utilisation profile of their terms (2 GPUs as declared: no NVIDIA driver (NVML: library not found))"},
		{"SyntheticOnNVML", MeterChoice{NVML: nvmlKind{}, GPUs: 8}, "", "meter: synthetic: jobs run no process and consume the utilisation profile of their terms"},
		{"NVML", MeterChoice{Runner: "process", NVML: nvmlKind{}, GPUs: 8}, contract.MeterNVML, "meter: nvml: the SM utilisation of each job's processes on 8 GPUs NVML found"},
		{"NVMLOverFallback", MeterChoice{Runner: "process", Fallback: FallbackFullUse, NVML: nvmlKind{}, GPUs: 8}, contract.MeterNVML, "meter: nvml:"},
		{"None", MeterChoice{Runner: "process", NoNVML: noLib, GPUs: 2}, "", "meter: none: no NVIDIA driver (NVML: library not found), so process jobs are refused; meter_fallback: full_use (--meter-fallback full_use) charges U = GPUs × T, as if every GPU were busy"},
		{"NoneSaid", MeterChoice{Runner: "process", Fallback: FallbackNone, NoNVML: noLib}, "", "meter: none:"},
		{"FullUse", MeterChoice{Runner: "process", Fallback: FallbackFullUse, NoNVML: noLib}, contract.MeterFullUse, "meter: full_use: no NVIDIA driver (NVML: library not found), so process jobs are charged U = GPUs × T, as if every GPU were busy (meter_fallback: full_use)"},
		{"Containers", MeterChoice{Runner: "container", Fallback: FallbackFullUse, NoNVML: noLib}, contract.MeterFullUse, "meter: full_use: no NVIDIA driver (NVML: library not found), so containers are charged"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, line, err := JobMeter(tt.c)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(line, tt.line) || strings.Contains(line, "\n") {
				t.Errorf("line %q, want one line starting %q", line, tt.line)
			}
			var kind contract.Meter
			if m != nil {
				kind = m.Kind()
			}
			if kind != tt.kind {
				t.Errorf("meter %q, want %q", kind, tt.kind)
			}
		})
	}
	t.Run("BadFallback", func(t *testing.T) {
		if _, _, err := JobMeter(MeterChoice{Fallback: "guess"}); err == nil || !strings.Contains(err.Error(), `meter_fallback "guess": want none or full_use`) {
			t.Errorf("JobMeter = %v", err)
		}
	})
}
