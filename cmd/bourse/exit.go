package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bourse/bourse"
)

// Exit statuses by class, for scripts: what went wrong decides whether to
// fix the command, change the request, or try again later.
const (
	exitFailure     = 1 // anything else: input that breaks a rule (a configuration, an offer's terms as the exchange judges them, a server's output: codes invalid, invalid_curve, invalid_offer), output that was lost (output_lost), a bug, an audit that fails
	exitUsage       = 2 // the command line cannot be right: unknown command or flag, a missing or bad argument or value (--price abc, and --gpus 0 or --wait 200h, which an offer's rules refuse: checked before anything connects, naming the flag), one setting given twice, a file a flag names that cannot be read as it must (-f), an address that cannot be served (demo --console)
	exitRefused     = 3 // the market (exchange, ledger, NATS's permissions) answered no to a well-formed request: the error's code says why
	exitUnavailable = 4 // NATS, the exchange or the database did not answer in time; the same command may work later
	// A command a signal stopped before it was done exits 128 plus the
	// signal's number, as shells report it (130 SIGINT, 143 SIGTERM).
)

// usageError is a command line that cannot be right.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// usagef is a usageError with a formatted message.
func usagef(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// markUsage makes cobra's own complaints about a command line (a flag it
// cannot parse, arguments of the wrong number) usage errors, in cmd and
// every command below it.
func markUsage(cmd *cobra.Command) {
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })
	if !cmd.Runnable() && cmd.HasSubCommands() {
		// Cobra answers "bourse bid nosuch" with bid's help and status 0.
		cmd.Args = cobra.ArbitraryArgs
		cmd.RunE = func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unknown command %q for %q", args[0], c.CommandPath())
			}
			return c.Help()
		}
	}
	if args := cmd.Args; args != nil {
		cmd.Args = func(c *cobra.Command, a []string) error {
			if err := args(c, a); err != nil {
				return &usageError{err}
			}
			return nil
		}
	}
	for _, c := range cmd.Commands() {
		markUsage(c)
	}
}

// exitStatus is err's class.
func exitStatus(err error) int {
	var u *usageError
	if errors.As(err, &u) {
		return exitUsage
	}
	var s stopped
	if errors.As(err, &s) {
		return s.status()
	}
	// Cobra finds these before any hook of ours runs, and types them not.
	if msg := err.Error(); strings.HasPrefix(msg, "unknown command ") || strings.HasPrefix(msg, "required flag(s) ") {
		return exitUsage
	}
	var e *bourse.Error
	if !errors.As(err, &e) {
		return exitFailure
	}
	switch e.Code {
	case bourse.EInternal, bourse.EInvalid, bourse.EInvalidCurve, bourse.EInvalidOffer, bourse.EOutputLost:
		return exitFailure
	case bourse.EUnavailable, bourse.EDeadlineExceeded, bourse.ERateLimited:
		return exitUnavailable
	}
	return exitRefused
}

// jsonError is an error as --json prints it, on standard error: one
// object a script can read whatever went wrong.
type jsonError struct {
	Error        string      `json:"error"`
	Code         bourse.Code `json:"code"`
	Field        string      `json:"field,omitempty"`
	RetryAfterMS int64       `json:"retry_after_ms,omitempty"`
	ExitStatus   int         `json:"exit_status"`
}

// printError writes err for cmd's user: a line, or JSON where cmd was
// asked for JSON (--json, --format json).
func printError(w io.Writer, cmd *cobra.Command, err error) {
	if !wantsJSON(cmd) {
		fmt.Fprintln(w, "bourse: "+errorText(err))
		return
	}
	j := jsonError{Error: err.Error(), Code: bourse.ErrorCode(err), ExitStatus: exitStatus(err)}
	if j.ExitStatus == exitUsage {
		j.Code = "usage"
	}
	var e *bourse.Error
	if errors.As(err, &e) {
		j.Field, j.RetryAfterMS = e.Field, e.RetryAfterMS
	}
	enc := json.NewEncoder(w)
	_ = enc.Encode(j)
}

func wantsJSON(cmd *cobra.Command) bool {
	if cmd == nil {
		return false
	}
	if f := cmd.Flags().Lookup("json"); f != nil && f.Value.String() == "true" {
		return true
	}
	f := cmd.Flags().Lookup("format")
	return f != nil && f.Value.String() == "json"
}
