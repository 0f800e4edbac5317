package main

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/bourse/bourse/console"
)

func newConsoleCmd() *cobra.Command {
	var dbURL, listen, usersFile, secretFile, certFile, keyFile, natsURL string
	var proxies []netip.Prefix
	var insecureHTTP bool
	var login natsLogin
	var tlsf natsTLS
	cmd := &cobra.Command{
		Use:   "console",
		Short: "Serve the administrators' web console on the ledger's database",
		Long: `console serves the administrators' web console: balances by organisation and
project, the money supply, allowances, caps, rates, the live market, cost
reports and the audit trail, with forms for grants, burns, allowances,
caps, rates and exchanges. Every form is the same idempotent, audited action as
"bourse admin", recorded under the logged-in user. Users and their roles
(admin or viewer) are in --users, made with "bourse console user"; send
the process SIGHUP after editing the file. Sessions are kept in the
database: logout, a change of password and "end all sessions" end them at
once in every console on it, and they outlive a restart. Serve it over TLS
(--tls-cert, --tls-key) or behind a proxy that does (--behind-proxy); it
listens on 127.0.0.1 by default, and refuses plain HTTP on any other
address unless told --insecure-http (docs/console.md, "Off loopback").
With --nats its Market page shows the market data the exchange publishes
there, live (its NATS user needs only to read bourse.v1.market.>:
docs/operations.md, "The console's NATS user"); without it the page says
it has none.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dbURL == "" || usersFile == "" {
				return usagef(`--db (or $DATABASE_URL) and --users are required (make a users file with "bourse console user NAME --role admin --users FILE")`)
			}
			users, err := console.ReadUsers(usersFile)
			if err != nil {
				return err
			}
			if len(users) == 0 {
				return fmt.Errorf("%s has no users: add one with bourse console user", usersFile)
			}
			var secret []byte
			if secretFile != "" {
				if secret, err = os.ReadFile(secretFile); err != nil {
					return usagef("--secret-file: %w", err)
				}
			}
			var natsOpts []nats.Option
			if natsURL != "" {
				loginOpts, err := login.options()
				if err != nil {
					return err
				}
				tlsOpts, err := tlsf.options()
				if err != nil {
					return err
				}
				natsOpts = append(loginOpts, tlsOpts...)
			}
			ctx := cmd.Context()
			log := commandLogger(cmd)
			store, closeStore, err := openStore(ctx, dbURL, log)
			if err != nil {
				return err
			}
			defer closeStore()
			t, err := openTreasury(ctx, store)
			if err != nil {
				return err
			}
			return serveConsole(ctx, cmd.OutOrStdout(), t, store, consoleOptions{listen: listen, users: users, usersFile: usersFile, secret: secret, cert: certFile, key: keyFile,
				proxies: proxies, insecureHTTP: insecureHTTP, natsURL: natsURL, natsOpts: natsOpts, log: log})
		},
	}
	f := cmd.Flags()
	f.StringVar(&dbURL, "db", "", "ledger database: postgres://… (PostgreSQL or CockroachDB; the password may come from $PGPASSWORD or ~/.pgpass instead of the URL)")
	bindEnv(f, "db", "DATABASE_URL")
	f.StringVar(&listen, "listen", "127.0.0.1:8080", "address to serve on")
	f.StringVar(&usersFile, "users", "", `users file ("name role bcrypt-hash" a line; see bourse console user)`)
	f.StringVar(&secretFile, "secret-file", "", "file whose bytes sign device cookies (the login throttle's), so that browsers stay known across a restart and to several consoles (default: random at start)")
	f.StringVar(&certFile, "tls-cert", "", "TLS certificate (PEM); with --tls-key serves HTTPS and marks cookies Secure")
	f.StringVar(&keyFile, "tls-key", "", "TLS private key (PEM)")
	f.Var(prefixList{&proxies}, "behind-proxy", "the address (or CIDR) of the TLS-terminating proxy the console is served behind (repeat): cookies are Secure, only the proxy may connect, and the client's address is read from its X-Forwarded-For")
	f.BoolVar(&insecureHTTP, "insecure-http", false, "serve plain HTTP on an address other than loopback anyway (passwords and session cookies cross the network in clear): a loud warning instead of a refusal")
	f.StringVar(&natsURL, "nats", "", "NATS server URL(s), comma-separated, whose market data the Market page shows (default: none)")
	bindEnv(f, "nats", "BOURSE_NATS_URL")
	login.addFlags(f)
	tlsf.addFlags(f)
	cmd.AddCommand(newConsoleUserCmd())
	return cmd
}

func newConsoleUserCmd() *cobra.Command {
	var usersFile, role, passwordFile string
	cmd := &cobra.Command{
		Use:   "user NAME --role admin|viewer --users FILE",
		Short: "Add a user to a console users file (the password is read from stdin or --password-file)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if usersFile == "" {
				return usagef("--users is required")
			}
			var pw string
			if passwordFile != "" {
				b, err := os.ReadFile(passwordFile)
				if err != nil {
					return usagef("--password-file: %w", err)
				}
				pw = strings.TrimRight(string(b), "\r\n")
			} else {
				line, err := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
				if err != nil && !errors.Is(err, io.EOF) {
					return fmt.Errorf("read the password from stdin: %w", err)
				}
				pw = strings.TrimRight(line, "\r\n")
			}
			if existing, err := console.ReadUsers(usersFile); err == nil {
				if _, ok := existing[args[0]]; ok {
					return fmt.Errorf("%s is in %s already: edit the file to change or remove it", args[0], usersFile)
				}
			} else if !errors.Is(err, os.ErrNotExist) {
				return err
			}
			line, err := console.UserLine(args[0], console.Role(role), pw)
			if err != nil {
				return err
			}
			f, err := os.OpenFile(usersFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
			if err != nil {
				return err
			}
			if _, err := fmt.Fprintln(f, line); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s (%s) added to %s\n", args[0], role, usersFile)
			return nil
		},
	}
	cmd.Flags().StringVar(&usersFile, "users", "", "the users file (made if missing, mode 0600)")
	cmd.Flags().StringVar(&role, "role", string(console.Admin), "admin (reads and writes) or viewer (reads)")
	cmd.Flags().StringVar(&passwordFile, "password-file", "", "read the password from this file instead of stdin")
	return cmd
}

// randomPassword is a demo's console password.
func randomPassword() string {
	b := make([]byte, 9)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
