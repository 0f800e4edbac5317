package main

import (
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
)

// TestJobMeter: the configuration's runner and meter_fallback, and what
// NVML found, reach server.JobMeter (which the server package tests):
// NVML's meter where it opened, the fallback where it did not, and a
// fallback of no such name refused as the configuration's mistake.
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
		{"NVML", "process", "", gpus, contract.MeterNVML, "meter: nvml: the SM utilisation of each job's processes on 8 GPUs NVML found"},
		{"None", "process", "", noLib, "", "meter: none: no NVIDIA driver (NVML: library not found), so process jobs are refused"},
		{"FullUse", "process", "full_use", noLib, contract.MeterFullUse, "meter: full_use: no NVIDIA driver (NVML: library not found), so process jobs are charged"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := parseServerConfig("s.yaml", []byte("gpus: [{count: 2, model: H100, memory_mib: 81920}]\nmeter_fallback: "+tt.fallback+"\nrunner: {kind: "+tt.runner+"}\n"))
			require.NoError(t, err)
			gpus, nv, why, err := cfg.gpusAndMeter(tt.lib, log)
			require.NoError(t, err)
			if nv != nil {
				defer nv.Close()
			}
			m, line, err := cfg.jobMeter(nv, why, len(gpus))
			require.NoError(t, err)
			assert.True(t, strings.HasPrefix(line, tt.line), "line %q", line)
			if tt.kind == "" {
				assert.Nil(t, m, "no meter: not a nil NVML meter in the interface")
			} else {
				require.NotNil(t, m)
				assert.Equal(t, tt.kind, m.Kind())
			}
		})
	}
	t.Run("BadFallback", func(t *testing.T) {
		cfg := serverConfig{MeterFallback: "guess"}
		if _, _, err := cfg.jobMeter(nil, "", 1); err == nil || !strings.Contains(err.Error(), `server config: meter_fallback "guess": want none or full_use`) {
			t.Errorf("jobMeter = %v", err)
		}
	})
}
