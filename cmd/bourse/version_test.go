package main

import (
	"bytes"
	"context"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// execute runs the root command with args and returns its output.
func execute(t testing.TB, readBuildInfo func() (*debug.BuildInfo, bool), args ...string) string {
	t.Helper()
	var out bytes.Buffer
	cmd := newRootCmd(readBuildInfo)
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("bourse %s: %v", strings.Join(args, " "), err)
	}
	return out.String()
}

func TestVersion(t *testing.T) {
	t.Run("RealBuildInfo", func(t *testing.T) {
		out := execute(t, debug.ReadBuildInfo, "version")
		if !strings.HasPrefix(out, "bourse ") {
			t.Errorf("output does not start with %q:\n%s", "bourse ", out)
		}
		if want := "go     " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n"; !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	})

	t.Run("VCSStamped", func(t *testing.T) {
		bi := &debug.BuildInfo{
			GoVersion: "go1.26.0",
			Main:      debug.Module{Path: "github.com/bourse/bourse", Version: "v1.2.3"},
			Settings: []debug.BuildSetting{
				{Key: "vcs", Value: "git"},
				{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
				{Key: "vcs.time", Value: "2026-01-02T03:04:05Z"},
				{Key: "vcs.modified", Value: "true"},
			},
		}
		got := execute(t, func() (*debug.BuildInfo, bool) { return bi, true }, "version")
		want := "bourse v1.2.3\n" +
			"go     go1.26.0 " + runtime.GOOS + "/" + runtime.GOARCH + "\n" +
			"commit 0123456789abcdef0123456789abcdef01234567 2026-01-02T03:04:05Z (modified)\n"
		if got != want {
			t.Errorf("got\n%s\nwant\n%s", got, want)
		}
	})

	t.Run("NoBuildInfo", func(t *testing.T) {
		got := execute(t, func() (*debug.BuildInfo, bool) { return nil, false }, "version")
		want := "bourse unknown\ngo     " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n"
		if got != want {
			t.Errorf("got\n%s\nwant\n%s", got, want)
		}
	})
}
