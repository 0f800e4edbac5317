package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/shopspring/decimal"
	"github.com/spf13/cobra"

	"github.com/bourse/bourse/console"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/mem"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/memstore"
	"github.com/bourse/bourse/market"
	"github.com/bourse/bourse/scenario"
	"github.com/bourse/bourse/server"
)

func newDemoCmd() *cobra.Command {
	var (
		duration time.Duration
		seed     uint64
		logFile  string
		quiet    bool
		dbURL    string
		console  string
	)
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run a whole market in this process and watch it trade",
		Long: `demo runs a whole market in one process, with no set-up: an embedded NATS
server with JetStream, the exchange on an in-memory ledger, four GPU servers
with different policies and GPU classes, and eight bidding agents with
budgets and strategies. It trades for --duration while it shows contracts,
prices, utilisation and balances, then lets running contracts settle, prints
a settlement summary and the ledger audit. The exit status is 1 if the audit
finds a broken invariant.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tuneGC()
			if duration <= 0 {
				return usagef("--duration must be positive, got %s", duration)
			}
			logger, closeLog, err := demoLogger(cmd, logFile)
			if err != nil {
				return err
			}
			defer closeLog()
			return runDemo(cmd.Context(), cmd.OutOrStdout(), demoConfig{duration: duration, seed: seed, logger: logger, dbURL: dbURL, console: console, quiet: quiet})
		},
	}
	cmd.AddCommand(newDemoGrantCmd())
	cmd.Flags().DurationVar(&duration, "duration", 20*time.Second, "how long to trade")
	cmd.Flags().Uint64Var(&seed, "seed", 1, "seed of the bidders' job generators")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print no progress while it trades: how to trade at the start, the summary and the audit at the end")
	cmd.Flags().StringVar(&logFile, "log", "", "write the market's logs to this file (default: discard)")
	cmd.Flags().StringVar(&dbURL, "db", "mem", "the ledger: mem, or a postgres:// URL of an empty PostgreSQL or CockroachDB database")
	cmd.Flags().StringVar(&console, "console", "", `also serve the administrators' web console on this address (e.g. 127.0.0.1:8080), as user "admin" with a password printed at the start; it stays up after the market stops, until you stop the demo`)
	return cmd
}

type demoConfig struct {
	duration time.Duration
	quiet    bool // no progress while it trades
	seed     uint64
	logger   *slog.Logger
	dbURL    string
	console  string
	// consoleUsers, if set, are the console's users instead of a fresh
	// admin; consoleReady gets its address (tests).
	consoleUsers console.Users
	consoleReady func(addr string)
}

// demoLogger keeps the live view clean: logs go to a file (in the format
// and from the level of --log-format and --log-level) or nowhere.
func demoLogger(cmd *cobra.Command, path string) (*slog.Logger, func(), error) {
	if path == "" {
		return slog.New(slog.DiscardHandler), func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, fmt.Errorf("open log file: %w", err)
	}
	return slog.New(logHandler(cmd, f)), func() { _ = f.Close() }, nil
}

func runDemo(ctx context.Context, out io.Writer, cfg demoConfig) error {
	// The console's address is checked before anything trades: a port in
	// use, or one off loopback (which the demo's console, without TLS,
	// refuses), fails at once rather than after the run.
	var consoleLn net.Listener
	if cfg.console != "" {
		ln, err := listenConsole(out, consoleOptions{listen: cfg.console, log: cfg.logger})
		if off := (offLoopbackError{}); errors.As(err, &off) {
			// The demo's console has no TLS flags to offer: say what it takes.
			return usagef("--console %s: the demo's console serves plain HTTP, so only on loopback (passwords and session cookies would cross the network in clear): "+
				"--console 127.0.0.1:PORT, or bourse console with TLS for a console others reach", cfg.console)
		}
		if err != nil {
			return usagef("--console %s: %w", cfg.console, err)
		}
		defer ln.Close()
		consoleLn = ln
	}
	var store exchange.Store = memstore.New(mem.New(mem.Options{}))
	if cfg.dbURL != "mem" {
		s, closeStore, err := openStore(ctx, cfg.dbURL, cfg.logger)
		if err != nil {
			return err
		}
		defer closeStore()
		store = s
	}
	m, err := market.Start(ctx, market.Config{Store: store, Seed: cfg.seed, Logger: cfg.logger, Clients: demoClients(), Servers: demoServers(cfg.seed),
		Wallets: []market.Wallet{{ID: keyboardClient, Budget: keyboardBudget}}, Faucet: demoFaucet})
	if err != nil {
		return err
	}
	consoleDone := make(chan error, 1)
	if cfg.console != "" {
		users := cfg.consoleUsers
		if users == nil {
			pw := randomPassword()
			line, err := console.UserLine("admin", console.Admin, pw)
			if err != nil {
				return err
			}
			if users, err = console.ParseUsers(line); err != nil {
				return err
			}
			fmt.Fprintf(out, "console: log in as admin with password %s\n", pw)
		}
		go func() {
			// Its Market page follows the embedded NATS, which has no
			// users: nothing to log in with.
			consoleDone <- serveConsole(ctx, out, m.Treasury(), store, consoleOptions{listen: cfg.console, ln: consoleLn, users: users, natsURL: m.URL(), log: cfg.logger, ready: cfg.consoleReady})
		}()
	}
	v := newView(out, m, store, cfg.duration)
	v.quiet = cfg.quiet
	v.run(ctx, cfg.duration)

	fmt.Fprintln(out, "\nTrading stopped; waiting for running contracts to settle…")
	stopCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m.Stop(stopCtx)

	v.summary(stopCtx)
	rep, err := store.Ledger().Audit(stopCtx)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	fmt.Fprintln(out, auditLine(rep))
	if !rep.OK() || rep.OpenHolds > 0 {
		return fmt.Errorf("the ledger audit failed")
	}
	if cfg.console != "" {
		fmt.Fprintln(out, "The console stays up until you stop the demo (Ctrl-C).")
		select {
		case <-ctx.Done():
			return <-consoleDone
		case err := <-consoleDone:
			return err
		}
	}
	return nil
}

// auditLine is the demo's last line: pass with counts, or the violations.
func auditLine(r currency.Report) string {
	if r.OK() && r.OpenHolds > 0 {
		return fmt.Sprintf("audit: FAIL: %d holds still open after the market stopped\n%s", r.OpenHolds, r)
	}
	return r.String()
}

// keyboardClient is the demo's client for the person at the keyboard:
// funded, and traded as by no bot, so that the README's commands find
// its money where they left it.
const keyboardClient = "you"

// keyboardBudget covers the README's offers (at most 21.00 and 48.00 held
// at once) with room to try more.
var keyboardBudget = decimal.NewFromInt(100)

// demoFaucet is the most bourse demo grant gives at a time.
var demoFaucet = decimal.NewFromInt(1000)

// demoClients are the default clients, each paid an allowance so that
// the market trades for as long as the demo runs, two of them capped, so
// that the demo shows each at work. Every bot's allowance pulls its
// balance towards its budget (dx/dt = a − b·x with b = 120/h, paid every
// 5 seconds: half the way back in about 21 seconds), which pays for what
// its jobs use (TestDemoEconomy); bea's pulls it towards 10.00, below its
// budget of 15.00, so that it shows the balance decaying too. cyd may
// hold 2 GPUs at once; gus may commit 10.00 a day (warned at 80%).
// demoServers are the default market's servers, but atlas learns its
// price (policy kind learning) around its posted 0.30, choosing a multiple
// from half to twice it every three seconds, so that a demo of a minute
// shows it move. The others keep their rules.
func demoServers(seed uint64) []scenario.ServerSpec {
	ss := scenario.DefaultServers()
	for i := range ss {
		if ss[i].ID != "atlas" {
			continue
		}
		base, _ := ss[i].Policy.(server.Posted)
		l, err := server.NewLearning(server.LearningConfig{Base: base, Floor: decimal.RequireFromString("0.5"), Ceiling: decimal.NewFromInt(2),
			Levels: 5, Epoch: 3 * time.Second, Seed: seed})
		if err != nil {
			panic("demo: atlas's learning policy: " + err.Error()) // a constant configuration
		}
		ss[i].Policy = l
	}
	return ss
}

func demoClients() []scenario.ClientSpec {
	cs := scenario.DefaultClients()
	for i := range cs {
		b := decimal.NewFromInt(demoAllowanceB)
		cs[i].Allowance = &scenario.Allowance{A: cs[i].Budget.Mul(b), B: b, Period: 5 * time.Second}
		switch cs[i].ID {
		case "cyd":
			cs[i].CapGPUs = 2
		case "gus":
			cs[i].DailySpend = decimal.NewFromInt(10)
		case "bea":
			cs[i].Allowance.A = decimal.NewFromInt(10).Mul(b)
		}
	}
	return cs
}

// demoAllowanceB is the share of a bot's balance its allowance takes back
// per hour, and of its target it pays: 120 (2% a second).
const demoAllowanceB = 120
