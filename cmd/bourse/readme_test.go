package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestREADMETrading follows the README's five minutes, read from
// README.md, against the demo as its first step starts it, with its bots
// trading meanwhile: the connection exported as the README says, then
// each command as written, but for the demo's URL and the contract the
// offer made. A market that is busy may answer an offer with
// counter-offers or reject it; the command is then made again, as its
// reader would, and anything else fails the test. The README's examples
// leave you money to trade on.
func TestREADMETrading(t *testing.T) {
	cmds, export := readmeCommands(t)
	require.Len(t, cmds, 4, "the README's five minutes: the demo, an offer, watch, the market")
	require.Equal(t, []string{"demo", "--duration", "5m", "--quiet"}, cmds[0])
	help := newBidCmd().Long
	for _, c := range cmds[1:] {
		if c[0] == "bid" {
			assert.Contains(t, help, "bourse "+strings.Join(c, " "), "bourse bid --help shows the README's commands")
		}
	}

	// The demo writes to a file that the test reads meanwhile.
	out, err := os.Create(filepath.Join(t.TempDir(), "demo.out"))
	require.NoError(t, err)
	defer out.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- runDemo(ctx, out, demoConfig{duration: 10 * time.Minute, seed: 1, dbURL: "mem", quiet: true, logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	}()
	defer func() {
		cancel()
		assert.NoError(t, <-done, "the demo's audit")
	}()
	url := demoURL(t, out.Name())
	said := readFile(t, out.Name())
	assert.Contains(t, said, "Trade yourself as client you (100.00 CRED, which no bot touches): bourse bid --nats "+url+" --id you balance")
	exported := strings.ReplaceAll(export, "nats://127.0.0.1:PORT", url)
	assert.Contains(t, said, exported+";", "the demo prints the README's export line")
	for _, kv := range strings.Fields(strings.TrimPrefix(exported, "export ")) {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}

	contractID, charged := "", decimal.Zero
	for _, c := range cmds[1:] {
		args := make([]string, len(c))
		for j, a := range c {
			args[j] = strings.ReplaceAll(a, "CONTRACT_ID", contractID)
		}
		stdout, stderr := readmeRun(t, args)
		switch strings.Join(args[:min(2, len(args))], " ") {
		case "bid offer":
			m := regexp.MustCompile(`(?m)^contract (c-[0-9a-f]+) with \S+: 1× H100 for up to 1m0s at 0\.35/GPU-s \(1260\.00/GPU-h\); prepayment 21\.00 CRED escrowed$`).FindStringSubmatch(stdout)
			require.NotNil(t, m, "the offer made no contract of 1 H100 for 1m at 0.35:\n%s%s", stdout, stderr)
			contractID = m[1]
		case "bid watch":
			m := regexp.MustCompile(`(?m)  settled   completed  U \d+\.\d GPU-s  T [\d.]+s: charged (\d+\.\d\d), refunded \d+\.\d\d CRED$`).FindStringSubmatch(stdout)
			require.NotNil(t, m, "watch follows the contract until it settles:\n%s", stdout)
			charged = decimal.RequireFromString(m[1])
		case "market":
			assert.True(t, strings.HasPrefix(stdout, "CRED at "), "%s", stdout)
			assert.Regexp(t, `(?m)^H100 +\d+ `, stdout)
			assert.Contains(t, stdout, "CRED/GPU-H", "prices per GPU-hour")
		default:
			t.Fatalf("the README runs %v, which this test does not know", args)
		}
	}
	stdout, _ := readmeRun(t, []string{"bid", "balance"})
	m := regexp.MustCompile(`(?m)^wallet/CRED/you +CRED +2 +\d+\.\d\d +\d+\.\d\d +(\d+\.\d\d)$`).FindStringSubmatch(stdout)
	require.NotNil(t, m, "balance:\n%s", stdout)
	assert.Equal(t, keyboardBudget.Sub(charged).StringFixed(2), m[1], "the wallet's total is its budget less the settled charge: no bot touched it")
	assert.True(t, decimal.RequireFromString(m[1]).GreaterThan(decimal.NewFromInt(90)), "the README's examples leave you able to trade on: %s", m[1])
}

// readmeCommands are the README's `go run ./cmd/bourse` lines, as the
// arguments after the command's name, and its export line.
func readmeCommands(t *testing.T) (cmds [][]string, export string) {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	for _, line := range strings.Split(string(readme), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "export BOURSE_") {
			export = line
		}
		rest, ok := strings.CutPrefix(line, "go run ./cmd/bourse ")
		if !ok || strings.HasPrefix(rest, "sim ") {
			continue
		}
		require.NotContains(t, rest, `'`, "quotes would need a shell: %s", line)
		require.NotContains(t, rest, `"`, "quotes would need a shell: %s", line)
		cmds = append(cmds, strings.Fields(rest))
	}
	require.NotEmpty(t, export, "the README exports the connection")
	return cmds, export
}

// readmeRun runs one command, again while the market refuses its offer
// for want of free GPUs (for up to a minute), and fails on any other error.
func readmeRun(t *testing.T, args []string) (stdout, stderr string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var out, errOut bytes.Buffer
		code := run(context.Background(), args, &out, &errOut)
		busy := strings.Contains(out.String(), "no contract;") || strings.Contains(errOut.String(), "no server accepted") ||
			strings.Contains(errOut.String(), "gave up")
		switch {
		case code == 0 && !busy:
			return out.String(), errOut.String()
		case busy && time.Now().Before(deadline):
			t.Logf("%s: the market is busy; again in a second", strings.Join(args, " "))
			time.Sleep(time.Second)
		default:
			t.Fatalf("bourse %s: exit status %d\n%s%s", strings.Join(args, " "), code, out.String(), errOut.String())
		}
	}
}

// demoURL waits for the demo to print the NATS URL it listens on.
func demoURL(t *testing.T, out string) string {
	t.Helper()
	re := regexp.MustCompile(`NATS at (nats://[0-9.:]+)`)
	for range 200 {
		if m := re.FindStringSubmatch(readFile(t, out)); m != nil {
			return m[1]
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the demo printed no NATS URL:\n%s", readFile(t, out))
	return ""
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}
