package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bourse/bourse"
)

// TestMain runs the bourse command itself when BOURSE_TEST_MAIN=1, so
// that a test can run it as a process of its own and send it signals.
func TestMain(m *testing.M) {
	runTestJob()
	if os.Getenv("BOURSE_TEST_MAIN") == "1" {
		main()
	}
	// The commands keep what they keep for a user (the counter-offers
	// shown, contexts) under the user's cache and configuration folders:
	// the tests' own, never the account's.
	// Nor the shell's settings: the README has a user export
	// BOURSE_NATS_URL and BOURSE_ID to trade by hand, and the same shell
	// then runs make test. The tests' own (BOURSE_TEST_*) stay.
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "BOURSE_") && !strings.HasPrefix(k, "BOURSE_TEST_") {
			os.Unsetenv(k)
		}
	}
	home, err := os.MkdirTemp("", "bourse-test-home-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CACHE_HOME", filepath.Join(home, "cache"))
	os.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "config"))
	code := m.Run()
	os.RemoveAll(home)
	os.Exit(code)
}

func TestRun(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		code       int
		stdout     string // a substring of standard output
		stderrLine string // standard error, exactly
	}{
		{name: "Version", args: []string{"version"}, code: 0, stdout: "bourse "},
		{name: "Help", args: []string{"--help"}, code: 0, stdout: "version"},
		{name: "UnknownCommand", args: []string{"nosuch"}, code: exitUsage,
			stderrLine: `bourse: unknown command "nosuch" for "bourse"`},
		{name: "ExtraArgument", args: []string{"version", "x"}, code: exitUsage,
			stderrLine: `bourse: unknown command "x" for "bourse version"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, &stdout, &stderr)
			if code != tt.code {
				t.Errorf("exit status %d, want %d (stderr %q)", code, tt.code, stderr.String())
			}
			if !strings.Contains(stdout.String(), tt.stdout) {
				t.Errorf("stdout %q lacks %q", stdout.String(), tt.stdout)
			}
			if tt.stderrLine != "" {
				if got := strings.SplitN(stderr.String(), "\n", 2)[0]; got != tt.stderrLine {
					t.Errorf("stderr starts %q, want %q", got, tt.stderrLine)
				}
			} else if stderr.Len() != 0 {
				t.Errorf("unexpected stderr %q", stderr.String())
			}
		})
	}
}

func TestErrorText(t *testing.T) {
	berr := bourse.Errorf(bourse.EInsufficientFunds, "currency.Hold", "balance 3.00 < 5.00")
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"Plain", fmt.Errorf("open config: %w", fmt.Errorf("no such file")), "open config: no such file"},
		{"BourseError", berr, "currency.Hold: insufficient_funds: balance 3.00 < 5.00 (code insufficient_funds)"},
		{"Wrapped", fmt.Errorf("settle c1: %w", berr),
			"settle c1: currency.Hold: insufficient_funds: balance 3.00 < 5.00 (code insufficient_funds)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := errorText(tt.err); got != tt.want {
				t.Errorf("errorText = %q, want %q", got, tt.want)
			}
		})
	}
}
