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

// TestREADMETrading runs the README's trading commands, read from
// README.md, against the demo as `bourse demo` starts it, with its bots
// trading meanwhile: each must work as written, but for the demo's URL
// and the contract the first offer made. A market that is busy may
// answer an offer with counter-offers or reject it; the command is then
// made again, as its reader would, and anything else fails the test.
func TestREADMETrading(t *testing.T) {
	cmds := readmeCommands(t)
	require.Len(t, cmds, 4, "the README's trading commands")
	help := newBidCmd().Long
	for _, c := range cmds {
		line := strings.ReplaceAll("bourse "+strings.Join(c, " "), "nats://127.0.0.1:PORT", "URL")
		assert.Contains(t, help, line, "bourse bid --help shows the README's commands")
	}

	// The demo writes to a file that the test reads meanwhile.
	out, err := os.Create(filepath.Join(t.TempDir(), "demo.out"))
	require.NoError(t, err)
	defer out.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- runDemo(ctx, out, demoConfig{duration: 10 * time.Minute, seed: 1, dbURL: "mem", logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	}()
	defer func() {
		cancel()
		assert.NoError(t, <-done, "the demo's audit")
	}()
	url := demoURL(t, out.Name())
	assert.Contains(t, readFile(t, out.Name()), "Trade yourself as client you (100.00 CRED, which no bot touches): bourse bid --nats "+url+" --id you balance")

	contractID, second, charged := "", "", decimal.Zero
	for i, c := range cmds {
		args := make([]string, len(c))
		for j, a := range c {
			a = strings.ReplaceAll(a, "nats://127.0.0.1:PORT", url)
			args[j] = strings.ReplaceAll(a, "CONTRACT_ID", contractID)
		}
		stdout, stderr := readmeRun(t, args)
		switch i {
		case 0:
			m := regexp.MustCompile(`(?m)^contract (c-[0-9a-f]+) with \S+: 1× H100 for up to 1m0s at 0\.35/GPU-s \(1260\.00/GPU-h\); prepayment 21\.00 CRED escrowed$`).FindStringSubmatch(stdout)
			require.NotNil(t, m, "the first offer made no contract of 1 H100 for 1m at 0.35:\n%s%s", stdout, stderr)
			contractID = m[1]
		case 1:
			m := regexp.MustCompile(`(?m)^contract (c-[0-9a-f]+) with \S+: 2× any GPU for up to 1m0s at `).FindStringSubmatch(stdout)
			require.NotNil(t, m, "the second offer made no contract of 2 GPUs:\n%s%s", stdout, stderr)
			second = m[1]
		case 2:
			m := regexp.MustCompile(`(?m)  settled   completed  U \d+\.\d GPU-s  T [\d.]+s: charged (\d+\.\d\d), refunded \d+\.\d\d CRED$`).FindStringSubmatch(stdout)
			require.NotNil(t, m, "watch follows the contract until it settles:\n%s", stdout)
			charged = decimal.RequireFromString(m[1])
			// The second runs 10s, not its whole time limit: it ends, and
			// leaves you money to trade on.
			out, _ := readmeRun(t, []string{"bid", "--nats", url, "--id", "you", "wait", second})
			m = regexp.MustCompile(`settled \(completed\), the job exited 0: charged (\d+\.\d\d), refunded`).FindStringSubmatch(out)
			require.NotNil(t, m, "the second contract completed:\n%s", out)
			charged = charged.Add(decimal.RequireFromString(m[1]))
		case 3:
			m := regexp.MustCompile(`(?m)^wallet/CRED/you +CRED +2 +\d+\.\d\d +\d+\.\d\d +(\d+\.\d\d)$`).FindStringSubmatch(stdout)
			require.NotNil(t, m, "balance:\n%s", stdout)
			assert.Equal(t, keyboardBudget.Sub(charged).StringFixed(2), m[1], "the wallet's total is its budget less the settled charges: no bot touched it")
			assert.True(t, decimal.RequireFromString(m[1]).GreaterThan(decimal.NewFromInt(50)), "the README's examples leave you able to trade on: %s", m[1])
		}
	}
}

// readmeCommands are the README's `go run ./cmd/bourse bid` lines, as the
// arguments after the command's name.
func readmeCommands(t *testing.T) [][]string {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	var cmds [][]string
	for _, line := range strings.Split(string(readme), "\n") {
		rest, ok := strings.CutPrefix(line, "    go run ./cmd/bourse bid ")
		if !ok {
			continue
		}
		require.NotContains(t, rest, `'`, "quotes would need a shell: %s", line)
		require.NotContains(t, rest, `"`, "quotes would need a shell: %s", line)
		cmds = append(cmds, append([]string{"bid"}, strings.Fields(rest)...))
	}
	return cmds
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
