package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// deadNATS is the URL of a port nothing listens on: a command that
// connected to it would exit 4, not 2.
func deadNATS(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return "nats://" + addr
}

// TestBadValuesBeforeConnecting: every value that cannot be right exits 2
// and names its flag, before the command connects to anything: with NATS
// unreachable, a command that checked only after connecting would exit 4
// with the connection's error instead.
func TestBadValuesBeforeConnecting(t *testing.T) {
	url := deadNATS(t)
	dir := t.TempDir()
	zero := filepath.Join(dir, "zero.yaml")
	require.NoError(t, os.WriteFile(zero, []byte("gpus: 0\ntime_limit: 1m\np: [[\"0\", \"0.3\"]]\n"), 0o600))
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"ZeroGPUs", []string{"offer", "--gpus", "0", "--price", "0.3"}, "--gpus: 0; want 1..1024"},
		{"NegativeGPUs", []string{"offer", "--gpus", "-1", "--price", "0.3"}, "--gpus: -1; want 1..1024"},
		{"ZeroTimeLimit", []string{"offer", "--time-limit", "0s", "--price", "0.3"}, "--time-limit: 0s; want more than 0"},
		{"NegativePrice", []string{"offer", "--price", "-1"}, "--price (p[0].y): negative: -1"},
		{"PriceNotANumber", []string{"offer", "--price", "abc"}, `--price "abc" is not a decimal number`},
		{"Utilization", []string{"offer", "--price", "0.3", "--utilization", "2"}, "--utilization: 2; want 0..1"},
		{"WaitTooLong", []string{"offer", "--price", "0.3", "--wait", "200h"}, "--wait 200h0m0s: want more than 0 and at most 168h0m0s"},
		{"UnsortedCurve", []string{"offer", "--p", "1:0.5,0.5:0.6"}, "--p: "},
		{"GoingWithoutValue", []string{"offer", "--auto", "going"}, "--auto needs --value"},
		{"UnknownStrategy", []string{"offer", "--auto", "greedy", "--value", "1"}, "want fixed, cheapest, adaptive, deadline or going"},
		{"NegativeMemory", []string{"offer", "--price", "0.3", "--min-memory", "-1"}, "--min-memory: negative"},
		{"ResumeZeroGPUs", []string{"resume", "c-x", "--gpus", "0"}, "--gpus: 0; want 1..1024"},
		{"QuoteZeroGPUs", []string{"quote", "--gpus", "0", "--price", "0.3"}, "--gpus: 0; want 1..1024"},
		{"TermsFile", []string{"offer", "-f", zero}, "-f " + zero + ": gpus: 0; want 1..1024"},
		{"TakeWithTerms", []string{"offer", "--take", "1", "--gpus", "2"}, "--take 1 takes a counter-offer as it was shown"},
		{"ResultsWithoutDir", []string{"results", "c-x"}, "DIR is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(context.Background(), append([]string{"bid", "--nats", url, "--id", "you"}, tc.args...), &out, &errOut)
			assert.Equal(t, exitUsage, code, "%s", errOut.String())
			assert.Contains(t, errOut.String(), tc.want)
			assert.NotContains(t, errOut.String(), "NATS", "it connected first")
		})
	}

	t.Run("SimPolicy", func(t *testing.T) {
		_, errOut, code := simCmd("compare", "../../examples/sim/posted-vs-surge.yaml", "--policy", "nosuch", "-o", t.TempDir())
		assert.Equal(t, exitUsage, code, errOut)
		assert.Contains(t, errOut, `--policy "nosuch"`)
	})

	t.Run("MarketCurrency", func(t *testing.T) {
		var out, errOut bytes.Buffer
		code := run(context.Background(), []string{"market", "--nats", url, "--currency", "NO.PE"}, &out, &errOut)
		assert.Equal(t, exitUsage, code, "%s", errOut.String())
		assert.Contains(t, errOut.String(), "--currency")
	})
}

// TestConnectionErrorNamesVariable: a NATS that cannot be reached is
// named with the variable the README teaches, BOURSE_NATS_URL.
func TestConnectionErrorNamesVariable(t *testing.T) {
	url := deadNATS(t)
	for _, args := range [][]string{{"bid", "--nats", url, "--id", "you", "balance"}, {"market", "--nats", url}} {
		var out, errOut bytes.Buffer
		code := run(context.Background(), args, &out, &errOut)
		assert.Equal(t, exitUnavailable, code, fmt.Sprint(args))
		assert.Contains(t, errOut.String(), "BOURSE_NATS_URL", fmt.Sprint(args))
	}
}
