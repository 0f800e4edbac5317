package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bourse/bourse/natsauth"
)

func newNATSConfigCmd() *cobra.Command {
	var (
		clients, servers, viewers []string
		exchangeUser              string
		host                      string
		port                      int
		example                   bool
		tls                       natsauth.TLS
		storeDir                  string
		sync                      string
	)
	cmd := &cobra.Command{
		Use:   "nats-config --client ID … --server ID … [--viewer ID …]",
		Short: "Print a nats-server configuration with a user per client and server, each held to its own subjects",
		Long: `nats-config prints a nats-server configuration for a market whose parties
log in with passwords: the exchange's user, which may publish and subscribe
anywhere, and a user per client and per GPU server that may publish only
under its own prefix and read only its own deliveries and inbox (the rules
of docs/protocol.md, "Identity"), and a user per --viewer that may only read
the market data (the console's Market page needs no more). Each password is made at random and
stored as a bcrypt hash; the passwords are printed once to stderr, as
"user password" lines, for you to hand out. --example-passwords writes
"<id>-secret" in the clear instead, as docs/nats-server.conf does.

--store-dir names the JetStream store in the file, so that nats-server
runs without -sd and a reload (nats-server --signal reload, after adding a
party) takes the new file: nats-server 2.9, Debian's, cannot reload a
store given on the command line. Without it the file enables JetStream
without a store directory: give it on the command line (nats-server -c
FILE -sd DIR) and restart nats-server after each change.

--sync-interval is JetStream's: always (the default) syncs every write to
disk before nats-server acknowledges it, so that a power loss of its host
loses nothing acknowledged; a duration bounds what one loses; default
leaves nats-server's own (two minutes), and is what nats-server before
2.10 (Debian's 2.9) takes: it refuses the setting. docs/operations.md
("Durability") says what each costs.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := natsauth.CheckSync(sync); err != nil {
				return usagef("--sync-interval: %v", err)
			}
			parties := []natsauth.Party{{ID: exchangeUser, Role: natsauth.RoleExchange}}
			for _, id := range clients {
				parties = append(parties, natsauth.Party{ID: id, Role: natsauth.RoleClient})
			}
			for _, id := range servers {
				parties = append(parties, natsauth.Party{ID: id, Role: natsauth.RoleServer})
			}
			for _, id := range viewers {
				parties = append(parties, natsauth.Party{ID: id, Role: natsauth.RoleViewer})
			}
			conf := natsauth.PasswordConfig{Host: host, Port: port, StoreDir: storeDir, Sync: sync, Parties: parties, TLS: tls}
			if err := conf.Check(); err != nil {
				return err
			}
			for i, p := range conf.Parties {
				if example {
					conf.Parties[i].Password = p.ID + "-secret"
					continue
				}
				clear, hash, err := natsauth.NewPassword()
				if err != nil {
					return err
				}
				conf.Parties[i].Password = hash
				fmt.Fprintf(cmd.ErrOrStderr(), "%s %s\n", p.ID, clear)
			}
			by := generatedBy(clients, servers, viewers, exchangeUser, example, tls)
			// The address too, so that the command remade from the
			// comment makes the same file.
			if cmd.Flags().Changed("host") {
				by = append(by, "--host", host)
			}
			if cmd.Flags().Changed("port") {
				by = append(by, "--port", fmt.Sprint(port))
			}
			if storeDir != "" {
				by = append(by, "--store-dir", storeDir)
			}
			if sync != natsauth.SyncAlways {
				by = append(by, "--sync-interval", sync)
			}
			conf.Command = strings.Join(append([]string{"bourse admin nats-config"}, by...), " ")
			return conf.Write(cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&clients, "client", nil, "a client's id (repeat)")
	f.StringArrayVar(&servers, "server", nil, "a GPU server's id (repeat)")
	f.StringArrayVar(&viewers, "viewer", nil, "a reader of the market data only, such as the console (repeat)")
	f.StringVar(&exchangeUser, "exchange-user", "exchange", "the exchange's NATS user")
	f.StringVar(&host, "host", "127.0.0.1", "the address nats-server listens on")
	f.IntVar(&port, "port", 4222, "the port nats-server listens on")
	f.StringVar(&storeDir, "store-dir", "", "the JetStream store, named in the file so that nats-server can reload it (empty: give it with -sd)")
	f.StringVar(&sync, "sync-interval", natsauth.SyncAlways, "JetStream's sync_interval: always (every write on disk before it is acknowledged), a duration, or default (nats-server's own; nats-server before 2.10 takes no other)")
	f.BoolVar(&example, "example-passwords", false, `write "<id>-secret" passwords in the clear (examples and tests only)`)
	f.StringVar(&tls.Cert, "tls-cert", "", "the NATS server's certificate (PEM): clients must then connect with TLS")
	f.StringVar(&tls.Key, "tls-key", "", "the NATS server's private key (PEM)")
	f.StringVar(&tls.CA, "tls-ca", "", "the CA (PEM) whose client certificates --tls-verify accepts")
	f.BoolVar(&tls.Verify, "tls-verify", false, "accept only clients with a certificate --tls-ca signed")
	return cmd
}

// generatedBy are the flags that make the same file again.
func generatedBy(clients, servers, viewers []string, exchangeUser string, example bool, tls natsauth.TLS) []string {
	var args []string
	if exchangeUser != "exchange" {
		args = append(args, "--exchange-user", exchangeUser)
	}
	for _, c := range clients {
		args = append(args, "--client", c)
	}
	for _, s := range servers {
		args = append(args, "--server", s)
	}
	for _, v := range viewers {
		args = append(args, "--viewer", v)
	}
	if example {
		args = append(args, "--example-passwords")
	}
	for _, f := range [][2]string{{"--tls-cert", tls.Cert}, {"--tls-key", tls.Key}, {"--tls-ca", tls.CA}} {
		if f[1] != "" {
			args = append(args, f[0], f[1])
		}
	}
	if tls.Verify {
		args = append(args, "--tls-verify")
	}
	return args
}
