package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExitStatuses: each class of failure exits with the status docs/cli.md
// gives it, whatever command or flag it comes from: 2 for a command line
// that cannot be right (a bad value, two sources of one secret, a missing
// -o, a terms file that cannot be read), 3 for the market's no (an --auto
// negotiation that gives up).
func TestExitStatuses(t *testing.T) {
	b := startBidMarket(t)
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	require.NoError(t, os.WriteFile(pw, []byte("secret\n"), 0o600))
	badYAML := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(badYAML, []byte("gpus: [1\n"), 0o600))
	unknown := filepath.Join(dir, "unknown.yaml")
	require.NoError(t, os.WriteFile(unknown, []byte("gpus: 1\nprize: 3\n"), 0o600))
	k := b.offerJSON("ada", short("200ms")...)

	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"BadPrice", []string{"offer", "--price", "abc"}, exitUsage, `--price "abc" is not a decimal number`},
		{"BadValue", []string{"offer", "--auto", "cheapest", "--value", "x"}, exitUsage, `--value "x" is not a decimal number`},
		{"ZeroPrepayment", []string{"offer", "--price", "0.3", "--prepayment", "0"}, exitUsage, "--prepayment 0: want more than 0"},
		{"BadCurve", []string{"offer", "--p", "0.5"}, exitUsage, `--p: breakpoint 1 "0.5" is not x:y`},
		{"PasswordTwice", []string{"--nats-password", "x", "--nats-password-file", pw, "balance"}, exitUsage, "--nats-password and --nats-password-file both give it"},
		{"ResultsWithoutOutput", []string{"results", k.ID}, exitUsage, "DIR is required"},
		{"ResultsTwoFolders", []string{"results", k.ID, "a", "-o", "b"}, exitUsage, "the folder is given twice"},
		{"NoTermsFile", []string{"offer", "-f", filepath.Join(dir, "absent.yaml")}, exitUsage, "-f: read the terms"},
		{"TermsFileNotYAML", []string{"offer", "-f", badYAML}, exitUsage, "bad.yaml: not YAML"},
		{"TermsFileUnknownKey", []string{"offer", "-f", unknown}, exitUsage, "prize"},
		{"AutoGivesUp", []string{"offer", "--auto", "fixed", "--value", "0.01", "--rounds", "1", "--time-limit", "20s"}, exitRefused, "--auto fixed: no contract"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := b.bid("ada", tc.args...)
			assert.Equal(t, tc.code, code, errOut)
			assert.Contains(t, errOut, tc.want)
		})
	}

	t.Run("QuoteWithoutCounters", func(t *testing.T) {
		// atlas would accept: no counter-offers, and no table of none.
		out := b.ok("ada", "quote", "--gpus", "1", "--price", "0.5", "--time-limit", "20s")
		assert.Contains(t, out, "Would accept now: atlas")
		assert.NotContains(t, out, "SERVER")
	})
}

// TestWatchStopped: a watch that SIGINT or SIGTERM stops says so, and
// that the contract goes on, not "context canceled", and exits as
// shells report a signal (128 + its number).
func TestWatchStopped(t *testing.T) {
	b := startBidMarket(t)
	k := b.offerJSON("ada", short("30s")...)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "bid", "--nats", b.m.URL(), "--id", "ada", "watch", k.ID)
			cmd.Env = append(os.Environ(), "BOURSE_TEST_MAIN=1")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			stdout, err := cmd.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			lines := bufio.NewScanner(stdout)
			for lines.Scan() && !strings.Contains(lines.Text(), "running") { // it is watching
			}
			require.NoError(t, cmd.Process.Signal(sig))
			go io.Copy(io.Discard, stdout)
			err = cmd.Wait()
			var ee *exec.ExitError
			require.True(t, errors.As(err, &ee), "exit: %v; stderr %s", err, stderr.String())
			assert.Equal(t, 128+int(sig), ee.ExitCode())
			want := map[syscall.Signal]string{syscall.SIGINT: "SIGINT", syscall.SIGTERM: "SIGTERM"}[sig]
			assert.Equal(t, "bourse: the watch of "+k.ID+" (the contract goes on: watch it again to follow it): stopped by "+want+"\n", stderr.String())
		})
	}
}
