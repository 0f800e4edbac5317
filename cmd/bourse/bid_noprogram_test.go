package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// TestNoProgram is issue 31's operator on the demo's synthetic server:
// an offer of a program is refused (it was accepted, ran nothing, and
// charged the whole prepayment), and the logs and results of a contract
// that ran no program say so and exit 3, where they printed nothing and
// exited 0.
func TestNoProgram(t *testing.T) {
	b := startBidMarket(t)

	t.Run("ProgramRefused", func(t *testing.T) {
		_, errOut, code := b.bid("ada", "offer", "--gpus", "1", "--model", "H100", "--price", "0.40", "--time-limit", "1m",
			"--command", "/usr/bin/python3", "--arg", "train.py")
		assert.Equal(t, exitRefused, code, errOut)
		assert.Contains(t, errOut, "job_unsupported")
		assert.Contains(t, errOut, "atlas: this server runs synthetic jobs only")
		assert.Contains(t, errOut, "a program (--command) goes to servers that run programs", "and says what to do")
		cs := b.ok("ada", "contracts")
		assert.NotContains(t, cs, "python3", "no contract was made")
	})

	t.Run("ImageRefused", func(t *testing.T) {
		_, errOut, code := b.bid("ada", "offer", "--gpus", "1", "--model", "H100", "--price", "0.40", "--time-limit", "1m",
			"--image", "ghcr.io/acme/train:v1", "--arg", "--epochs=3")
		assert.Equal(t, exitRefused, code, errOut)
		assert.Contains(t, errOut, "job_unsupported")
		assert.Contains(t, errOut, "atlas: this server runs synthetic jobs only, not container images, so ghcr.io/acme/train:v1 would not run here")
		assert.Contains(t, errOut, "an image (--image) to servers that run containers", "and says what to do")
	})

	t.Run("MalformedImage", func(t *testing.T) {
		_, errOut, code := b.bid("ada", "offer", "--gpus", "1", "--price", "0.40", "--time-limit", "1m", "--image", "ghcr.io/Acme/train")
		// A value the offer's rules refuse, told before anything connects.
		assert.Equal(t, exitUsage, code, errOut)
		assert.Contains(t, errOut, `--image: "ghcr.io/Acme/train": the repository's part "Acme" is not lower-case`)
	})

	k := b.offerJSON("ada", short("100ms")...)
	got := b.waitState("ada", k.ID, contract.StateSettled)
	require.Equal(t, contract.MeterSynthetic, got.Meter)
	for _, args := range [][]string{{"logs", k.ID}, {"logs", "--follow", k.ID}, {"results", k.ID, "-o", t.TempDir()}, {"results", "--wait", k.ID, "-o", t.TempDir()}} {
		out, errOut, code := b.bid("ada", args...)
		assert.Equal(t, exitRefused, code, "bourse bid %v: %s%s", args, out, errOut)
		assert.Contains(t, errOut, "no_program", "bourse bid %v", args)
		assert.Contains(t, errOut, "contract "+k.ID+" ran no program", "bourse bid %v", args)
		assert.Contains(t, errOut, "its terms name no program", "bourse bid %v", args)
	}
}

// TestRanNoProgram: which contracts logs and results call programless:
// a program's that a synthetic server ran (as servers before this
// change did), one voided before its start, one whose terms name none;
// not a program's that ran or may yet.
func TestRanNoProgram(t *testing.T) {
	prog := &contract.JobSpec{Command: "/usr/bin/python3"}
	for _, tt := range []struct {
		name string
		k    protocol.ContractView
		why  string // "" for a program that ran or may
	}{
		{"Synthetic", protocol.ContractView{ID: "c-1", Server: "atlas", State: contract.StateSettled, Meter: contract.MeterSynthetic, Terms: contract.Terms{Job: prog}},
			"server atlas ran a synthetic job (metered by synthetic), not /usr/bin/python3"},
		{"Voided", protocol.ContractView{ID: "c-1", State: contract.StateVoided, Terms: contract.Terms{Job: prog}}, "it was voided before its job started"},
		{"NoJob", protocol.ContractView{ID: "c-1", State: contract.StateRunning}, "its terms name no program and no image"},
		{"Image", protocol.ContractView{ID: "c-1", State: contract.StateSettled, Meter: contract.MeterNVML, Terms: contract.Terms{Job: &contract.JobSpec{Image: "busybox"}}}, ""},
		{"Ran", protocol.ContractView{ID: "c-1", State: contract.StateSettled, Meter: contract.MeterNVML, Terms: contract.Terms{Job: prog}}, ""},
		{"NotStarted", protocol.ContractView{ID: "c-1", State: contract.StateAccepted, Terms: contract.Terms{Job: prog}}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := ranNoProgram(tt.k, "logs")
			if tt.why == "" {
				assert.NoError(t, err)
				return
			}
			assert.Equal(t, bourse.ENoProgram, bourse.ErrorCode(err))
			assert.Equal(t, exitRefused, exitStatus(err))
			assert.Equal(t, "contract c-1 ran no program, so it has no logs: "+tt.why, bourse.ErrorMessage(err))
		})
	}
}
