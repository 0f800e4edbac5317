package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func newVersionCmd(readBuildInfo func() (*debug.BuildInfo, bool)) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of bourse, the Go version and the VCS revision",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprint(cmd.OutOrStdout(), versionText(readBuildInfo))
			return err
		},
	}
}

// versionText describes the build: the main module's version ("(devel)" for
// a build from a work tree without a tag), the Go toolchain that built it and
// the platform, and, where the build stamped them (go build -buildvcs), the
// revision, its time and whether the tree was modified.
func versionText(readBuildInfo func() (*debug.BuildInfo, bool)) string {
	version, goVersion := "unknown", runtime.Version()
	var revision, revTime, modified string
	if bi, ok := readBuildInfo(); ok {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		if bi.GoVersion != "" {
			goVersion = bi.GoVersion
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.time":
				revTime = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
	}
	s := fmt.Sprintf("bourse %s\ngo     %s %s/%s\n", version, goVersion, runtime.GOOS, runtime.GOARCH)
	if revision != "" {
		s += "commit " + revision
		if revTime != "" {
			s += " " + revTime
		}
		if modified == "true" {
			s += " (modified)"
		}
		s += "\n"
	}
	return s
}
