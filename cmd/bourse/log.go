package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// addLogFlags gives every command --log-format and --log-level.
func addLogFlags(pf *pflag.FlagSet) {
	pf.String("log-format", "text", "logs as text or json (one object a line, for a log collector)")
	pf.String("log-level", "info", "the least level logged: debug, info, warn or error")
	bindEnv(pf, "log-format", "BOURSE_LOG_FORMAT")
	bindEnv(pf, "log-level", "BOURSE_LOG_LEVEL")
}

// checkLogFlags refuses a format or level there is none of, before the
// command runs, so that logHandler need not.
func checkLogFlags(cmd *cobra.Command) error {
	if f := flagString(cmd, "log-format"); f != "text" && f != "json" {
		return usagef("--log-format %q: want text or json", f)
	}
	var l slog.Level
	if err := l.UnmarshalText([]byte(flagString(cmd, "log-level"))); err != nil {
		return usagef("--log-level %q: want debug, info, warn or error", flagString(cmd, "log-level"))
	}
	return nil
}

// logHandler writes cmd's logs to w in the format and from the level its
// flags say.
func logHandler(cmd *cobra.Command, w io.Writer) slog.Handler {
	opts := &slog.HandlerOptions{Level: slog.LevelInfo}
	var l slog.Level
	if err := l.UnmarshalText([]byte(flagString(cmd, "log-level"))); err == nil {
		opts.Level = l
	}
	if flagString(cmd, "log-format") == "json" {
		opts.ReplaceAttr = jsonAttr
		return slog.NewJSONHandler(w, opts)
	}
	return slog.NewTextHandler(w, opts)
}

// jsonAttr writes a duration as the text handler does ("1.5s"), not as
// the nanoseconds slog's JSON handler writes, which a person reading the
// log, or a collector's query, would have to divide.
func jsonAttr(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(a.Value.Duration().String())
	}
	return a
}

// say writes a line a person reads at a command's start ("meter: …",
// "policy: …"): as it is in a text log, as a record whose message it is
// under --log-format json, so that every line of a JSON log is an object.
func say(cmd *cobra.Command, log *slog.Logger, line string) {
	if flagString(cmd, "log-format") == "json" {
		log.Info(line)
		return
	}
	fmt.Fprintln(cmd.ErrOrStderr(), line)
}

// commandLogger is a command's log, to its stderr. Each command has its
// own rather than the process's default, so that commands run side by
// side in one process (the tests do) each log where they were told.
func commandLogger(cmd *cobra.Command) *slog.Logger {
	return slog.New(logHandler(cmd, cmd.ErrOrStderr()))
}

func flagString(cmd *cobra.Command, name string) string {
	if f := cmd.Flags().Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}
