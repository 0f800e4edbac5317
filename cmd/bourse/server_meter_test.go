package main

import (
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/server"
)

// TestJobMeter: the server's start line says, in one line, what measures
// its jobs: the synthetic meter with the synthetic runner only; NVML for
// process jobs where it opens; where it does not, the fallback the
// operator chose, or none, which refuses process jobs and names the
// fallback.
func TestJobMeter(t *testing.T) {
	noLib := func(...nvml.LibraryOption) nvml.Interface {
		return &mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }}
	}
	gpus := func(...nvml.LibraryOption) nvml.Interface { return dgxa100.New() }
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tt := range []struct {
		name, runner, fallback string
		lib                    func(...nvml.LibraryOption) nvml.Interface
		kind                   contract.Meter // "" for no meter
		line                   string
	}{
		{"Synthetic", "synthetic", "", noLib, "", "meter: synthetic: jobs run no process and consume the utilisation profile of their terms (2 GPUs as declared: no NVIDIA driver (NVML: library not found))"},
		{"SyntheticOnNVML", "", "", gpus, "", "meter: synthetic: jobs run no process and consume the utilisation profile of their terms"},
		{"NVML", "process", "", gpus, contract.MeterNVML, "meter: nvml: the SM utilisation of each job's processes on 8 GPUs NVML found"},
		{"NVMLOverFallback", "process", "full_use", gpus, contract.MeterNVML, "meter: nvml:"},
		{"None", "process", "", noLib, "", "meter: none: no NVIDIA driver (NVML: library not found), so process jobs are refused; meter_fallback: full_use (--meter-fallback full_use) charges U = GPUs × T, as if every GPU were busy"},
		{"NoneSaid", "process", "none", noLib, "", "meter: none:"},
		{"FullUse", "process", "full_use", noLib, contract.MeterFullUse, "meter: full_use: no NVIDIA driver (NVML: library not found), so process jobs are charged U = GPUs × T, as if every GPU were busy (meter_fallback: full_use)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := parseServerConfig("s.yaml", []byte("gpus: [{count: 2, model: H100, memory_mib: 81920}]\nmeter_fallback: "+tt.fallback+"\nrunner: {kind: "+tt.runner+"}\n"))
			if err != nil {
				t.Fatal(err)
			}
			gpus, nv, why, err := cfg.gpusAndMeter(tt.lib, log)
			if err != nil {
				t.Fatal(err)
			}
			if nv != nil {
				defer nv.Close()
			}
			m, line, err := cfg.jobMeter(nv, why, len(gpus))
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
		cfg := serverConfig{MeterFallback: "guess"}
		if _, _, err := cfg.jobMeter(nil, "", 1); err == nil || !strings.Contains(err.Error(), `meter_fallback "guess": want none or full_use`) {
			t.Errorf("jobMeter = %v", err)
		}
	})
	var _ server.Meter = server.FullUse{}
}
