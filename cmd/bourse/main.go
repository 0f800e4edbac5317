// Command bourse is the one binary of the Bourse market for GPU compute.
//
//	bourse demo       a whole market in one process, with a live view
//	bourse exchange   run an exchange instance against NATS and a database
//	bourse admin      currencies, wallets, grants and the audit, on the database
//	bourse bid        a client: offer, watch, suspend, kill, resume, balances
//	bourse server     the agent on a GPU node: policy, runner, NVML meter
//	bourse version    print the version of this binary
//
// Errors are printed as "bourse: <message>" on standard error (a JSON
// object with --json or --format json); errors that carry a bourse.Error
// code print it too, so that scripts can tell "insufficient_funds" from
// "unavailable". The exit status says the class (exit.go): 0 done, 1 a
// failure, 2 a command line that cannot be right, 3 the market said no,
// 4 NATS, the exchange or the database did not answer.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/bourse/bourse"
)

func main() {
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, nil)))
	ctx, stop := onSignal(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// stopped is the cause of a command's context that ended on a signal:
// a command that the signal cut short returns it (wrapped), and says
// "stopped by SIGTERM" rather than "context canceled".
type stopped struct{ sig os.Signal }

func (s stopped) Error() string {
	switch s.sig {
	case syscall.SIGINT:
		return "stopped by SIGINT"
	case syscall.SIGTERM:
		return "stopped by SIGTERM"
	}
	return "stopped by signal " + s.sig.String()
}

// status is 128 plus the signal's number, as shells report a command a
// signal ended.
func (s stopped) status() int {
	if n, ok := s.sig.(syscall.Signal); ok {
		return 128 + int(n)
	}
	return exitFailure
}

// onSignal is signal.NotifyContext whose context's cause (context.Cause)
// names the signal that ended it.
func onSignal(parent context.Context, sigs ...os.Signal) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	go func() {
		select {
		case s := <-ch:
			cancel(stopped{s})
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		cancel(nil)
	}
}

// interrupted is the error of a command whose context a signal ended,
// what to say of it first: nil if no signal did.
func interrupted(ctx context.Context, what string) error {
	var s stopped
	if !errors.As(context.Cause(ctx), &s) {
		return nil
	}
	return fmt.Errorf("%s: %w", what, s)
}

// run executes the command line args and returns the process exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCmd(debug.ReadBuildInfo)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	// bourse completion bash|zsh|fish|powershell: made once the output is
	// set, which its scripts go to, and before markUsage, so that its
	// commands are marked too.
	root.InitDefaultCompletionCmd()
	markUsage(root)
	if cmd, err := root.ExecuteContextC(ctx); err != nil {
		if code, ok := asExitCode(err); ok {
			return code // said already
		}
		var s stopped
		if !errors.As(err, &s) && strings.HasSuffix(err.Error(), context.Canceled.Error()) && errors.As(context.Cause(ctx), &s) {
			// What a signal cut short says so, not "context canceled";
			// a command that says what the signal did (sim) keeps its
			// words and its status.
			err = s
		}
		printError(stderr, cmd, err)
		return exitStatus(err)
	}
	return 0
}

// newRootCmd builds the command tree. readBuildInfo is debug.ReadBuildInfo
// outside tests.
func newRootCmd(readBuildInfo func() (*debug.BuildInfo, bool)) *cobra.Command {
	if readBuildInfo == nil {
		readBuildInfo = debug.ReadBuildInfo
	}
	root := &cobra.Command{
		Use:   "bourse",
		Short: "Bourse, a market for GPU compute",
		Long: `Bourse is a market for GPU compute: clients offer for GPU time with a time
limit, a prepayment and price functions of GPU use; servers accept or counter;
the prepayment is escrowed in a double-entry ledger until the job is settled.`,
		// run prints errors once, in its own format; usage only on request.
		SilenceErrors: true,
		SilenceUsage:  true,
		// bourse --version says what bourse version does.
		Version: versionText(readBuildInfo),
		// Flags left out fall back to the environment (env.go).
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyEnv(cmd); err != nil {
				return &usageError{err}
			}
			if err := applyContext(cmd); err != nil {
				return err
			}
			return checkLogFlags(cmd)
		},
	}
	root.SetVersionTemplate("{{.Version}}")
	addLogFlags(root.PersistentFlags())
	root.AddCommand(newVersionCmd(readBuildInfo), newDemoCmd(), newExchangeCmd(), newAdminCmd(), newConsoleCmd(), newBidCmd(), newContextCmd(), newMarketCmd(), newServerCmd(), newSimCmd())
	return root
}

// errorText formats err for the command line: the error itself and, where
// it carries one, its bourse code.
func errorText(err error) string {
	var e *bourse.Error
	if errors.As(err, &e) {
		return safeText(fmt.Sprintf("%v (code %s)", err, e.Code))
	}
	return safeText(err.Error())
}
