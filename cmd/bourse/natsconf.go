package main

import (
	"crypto/rand"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/crypto/bcrypt"

	"github.com/bourse/bourse/natsauth"
	"github.com/bourse/bourse/protocol"
)

// natsParty is a NATS user of the market: the exchange, a client or a
// GPU server.
type natsParty struct {
	id, role, password string
}

func newNATSConfigCmd() *cobra.Command {
	var (
		clients, servers, viewers []string
		exchangeUser              string
		host                      string
		port                      int
		example                   bool
		tls                       natsServerTLS
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
			parties := []natsParty{{id: exchangeUser, role: "exchange"}}
			for _, id := range clients {
				parties = append(parties, natsParty{id: id, role: protocol.RoleClient})
			}
			for _, id := range servers {
				parties = append(parties, natsParty{id: id, role: protocol.RoleServer})
			}
			for _, id := range viewers {
				parties = append(parties, natsParty{id: id, role: natsauth.RoleViewer})
			}
			seen := map[string]bool{}
			for _, p := range parties {
				if err := protocol.CheckID(p.id); err != nil {
					return fmt.Errorf("%s %q: %w", p.role, p.id, err)
				}
				if seen[p.id] {
					return fmt.Errorf("%q twice: every party is one NATS user", p.id)
				}
				seen[p.id] = true
			}
			for i := range parties {
				if example {
					parties[i].password = parties[i].id + "-secret"
					continue
				}
				pw := rand.Text()
				hash, err := bcrypt.GenerateFromPassword([]byte(pw), 11)
				if err != nil {
					return fmt.Errorf("bcrypt: %w", err)
				}
				parties[i].password = string(hash)
				fmt.Fprintf(cmd.ErrOrStderr(), "%s %s\n", parties[i].id, pw)
			}
			if (tls.cert == "") != (tls.key == "") || (tls.verify && tls.ca == "") || (tls.cert == "" && (tls.ca != "" || tls.verify)) {
				return fmt.Errorf("TLS needs --tls-cert and --tls-key together, and --tls-verify needs --tls-ca")
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
			return writeNATSConfig(cmd.OutOrStdout(), host, port, natsauth.JetStreamBlock(storeDir, sync), storeDir != "", parties, tls, strings.Join(append([]string{"bourse admin nats-config"}, by...), " "))
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
	f.StringVar(&tls.cert, "tls-cert", "", "the NATS server's certificate (PEM): clients must then connect with TLS")
	f.StringVar(&tls.key, "tls-key", "", "the NATS server's private key (PEM)")
	f.StringVar(&tls.ca, "tls-ca", "", "the CA (PEM) whose client certificates --tls-verify accepts")
	f.BoolVar(&tls.verify, "tls-verify", false, "accept only clients with a certificate --tls-ca signed")
	return cmd
}

func generatedBy(clients, servers, viewers []string, exchangeUser string, example bool, tls natsServerTLS) []string {
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
	for _, f := range [][2]string{{"--tls-cert", tls.cert}, {"--tls-key", tls.key}, {"--tls-ca", tls.ca}} {
		if f[1] != "" {
			args = append(args, f[0], f[1])
		}
	}
	if tls.verify {
		args = append(args, "--tls-verify")
	}
	return args
}

// natsServerTLS is the tls block of the configuration; empty for none.
type natsServerTLS struct {
	cert, key, ca string
	verify        bool
}

// writeNATSConfig writes the configuration; docs/nats-server.conf is its
// output for alice, bob, gpu1 and gpu2 (a test keeps them equal).
func writeNATSConfig(w io.Writer, host string, port int, jetstream string, storeNamed bool, parties []natsParty, tls natsServerTLS, command string) error {
	var b strings.Builder
	b.WriteString(`# nats-server configuration for a Bourse market: identity by subject.
#
# Each client and each GPU server is a NATS user that may publish only under
# its own prefix (bourse.v1.client.<id>.> or bourse.v1.server.<id>.>) and
# subscribe only to its own deliveries (bourse.v1.deliver.<id>.>), its own
# inbox (_INBOX_<id>.>, set with nats.CustomInboxPrefix) and the public
# market data (bourse.v1.market.>, which only the exchange publishes). A
# client may also put files into its own object store bucket
# (BOURSE_FILES_<id>, which the exchange makes), through the JetStream
# calls on that bucket's stream alone that putting needs.
# allow_responses lets a server answer the exchange's requests. The
# exchange trusts the subject token as the sender, so these permissions are
# what make identity hold.
#
# Made by:
#   ` + command + `
# Without --example-passwords the passwords are random and stored as
# bcrypt hashes. Use TLS in production (docs/operations.md).`)
	if storeNamed {
		b.WriteString(`
# Run it as it is, without -sd: the JetStream store is named here, so that
# nats-server --signal reload takes a changed file:
#   nats-server -c nats-server.conf
`)
	} else {
		b.WriteString(` Run, with the
# JetStream store given on the command line:
#   nats-server -c nats-server.conf -sd /var/lib/bourse/jetstream
`)
	}
	fmt.Fprintf(&b, "port: %d\nhost: %s\n%s", port, host, jetstream)
	if tls.cert != "" {
		// Every connection is TLS; with verify, only clients whose
		// certificate the CA signed get to the password check.
		fmt.Fprintf(&b, "\ntls {\n  cert_file: %q\n  key_file: %q\n", tls.cert, tls.key)
		if tls.ca != "" {
			fmt.Fprintf(&b, "  ca_file: %q\n", tls.ca)
		}
		if tls.verify {
			b.WriteString("  verify: true\n")
		}
		b.WriteString("  timeout: 2\n}\n")
	}
	b.WriteString("\nauthorization {\n  users = [\n")
	for _, p := range parties {
		perms, err := natsauth.PermissionsOf(p.role, p.id)
		if err != nil {
			return err
		}
		switch {
		case perms.All:
			b.WriteString("    # The exchange: everything, including JetStream and micro ($SRV) APIs.\n")
			fmt.Fprintf(&b, "    { user: %s, password: %q }\n", p.id, p.password)
			continue
		case perms.DenyPublish:
			b.WriteString("\n    # A viewer reads the market data and publishes nothing.\n")
		case p.role == protocol.RoleClient:
			b.WriteString("\n    # Its own bucket of files (" + protocol.FilesBucketOf(p.id) + ") and the JetStream calls that put them there.\n")
		default:
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "    { user: %s, password: %q, permissions: {\n", p.id, p.password)
		if perms.DenyPublish {
			b.WriteString("        publish: { deny: [\">\"] }\n")
		} else {
			fmt.Fprintf(&b, "        publish: [%s]\n", quoted(perms.Publish))
		}
		fmt.Fprintf(&b, "        subscribe: [%s]\n", quoted(perms.Subscribe))
		if perms.Responses {
			b.WriteString("        allow_responses: true\n")
		}
		b.WriteString("    }}\n")
	}
	b.WriteString("  ]\n}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// quoted lists subjects as the configuration writes them: quoted, with
// commas between, or a line each where there are more than three.
func quoted(subjects []string) string {
	q := make([]string, len(subjects))
	for i, s := range subjects {
		q[i] = fmt.Sprintf("%q", s)
	}
	if len(q) <= 3 {
		return strings.Join(q, ", ")
	}
	return "\n          " + strings.Join(q, "\n          ") + "\n        "
}
