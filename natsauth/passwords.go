package natsauth

import (
	"crypto/rand"
	"fmt"
	"io"
	"strings"

	"golang.org/x/crypto/bcrypt"

	"github.com/bourse/bourse/protocol"
)

// A market whose parties log in with passwords (bourse admin
// nats-config) is one nats-server configuration: a user per party, each
// held to PermissionsOf its role, as the JWTs of operator mode are
// (permit). Both are written here, from the one table.

// Party is a NATS user of a market in password mode: its id, its role
// and its password, in the clear or as a bcrypt hash (NewPassword).
type Party struct {
	ID, Role, Password string
}

// TLS is the tls block of a configuration; empty for none.
type TLS struct {
	Cert, Key, CA string
	Verify        bool // only clients whose certificate CA signed
}

// PasswordConfig is a nats-server configuration for a market whose
// parties log in with passwords.
type PasswordConfig struct {
	Host string
	Port int
	// StoreDir names the JetStream store in the file, so that
	// nats-server reloads it; empty leaves it to the command line (-sd).
	StoreDir string
	Sync     string // JetStream's sync_interval (JetStreamBlock)
	Parties  []Party
	TLS      TLS
	// Command is what made the file, named in its comment so that it
	// can be made again.
	Command string
}

// NewPassword makes a random password, and its bcrypt hash for the
// configuration to keep.
func NewPassword() (clear, hash string, err error) {
	clear = rand.Text()
	h, err := bcrypt.GenerateFromPassword([]byte(clear), 11)
	if err != nil {
		return "", "", fmt.Errorf("bcrypt: %w", err)
	}
	return clear, string(h), nil
}

// Check says what is wrong with c, before any password is made for it:
// every party's id valid and its own NATS user, the TLS files given
// together, and the sync setting one nats-server takes.
func (c PasswordConfig) Check() error {
	seen := map[string]bool{}
	for _, p := range c.Parties {
		if err := protocol.CheckID(p.ID); err != nil {
			return fmt.Errorf("%s %q: %w", p.Role, p.ID, err)
		}
		if seen[p.ID] {
			return fmt.Errorf("%q twice: every party is one NATS user", p.ID)
		}
		seen[p.ID] = true
	}
	t := c.TLS
	if (t.Cert == "") != (t.Key == "") || (t.Verify && t.CA == "") || (t.Cert == "" && (t.CA != "" || t.Verify)) {
		return fmt.Errorf("TLS needs --tls-cert and --tls-key together, and --tls-verify needs --tls-ca")
	}
	if c.Sync != "" {
		return CheckSync(c.Sync)
	}
	return nil
}

// Write writes the configuration; docs/nats-server.conf is bourse admin
// nats-config's for alice, bob, gpu1 and gpu2 (a test keeps them equal).
func (c PasswordConfig) Write(w io.Writer) error {
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
#   ` + c.Command + `
# Without --example-passwords the passwords are random and stored as
# bcrypt hashes. Use TLS in production (docs/operations.md).`)
	if c.StoreDir != "" {
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
	fmt.Fprintf(&b, "port: %d\nhost: %s\n%s", c.Port, c.Host, JetStreamBlock(c.StoreDir, c.Sync))
	if t := c.TLS; t.Cert != "" {
		// Every connection is TLS; with verify, only clients whose
		// certificate the CA signed get to the password check.
		fmt.Fprintf(&b, "\ntls {\n  cert_file: %q\n  key_file: %q\n", t.Cert, t.Key)
		if t.CA != "" {
			fmt.Fprintf(&b, "  ca_file: %q\n", t.CA)
		}
		if t.Verify {
			b.WriteString("  verify: true\n")
		}
		b.WriteString("  timeout: 2\n}\n")
	}
	b.WriteString("\nauthorization {\n  users = [\n")
	for _, p := range c.Parties {
		if err := writeUser(&b, p); err != nil {
			return err
		}
	}
	b.WriteString("  ]\n}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// writeUser writes p's entry in the users list: its permissions
// (PermissionsOf) as nats-server's configuration says them.
func writeUser(b *strings.Builder, p Party) error {
	perms, err := PermissionsOf(p.Role, p.ID)
	if err != nil {
		return err
	}
	switch {
	case perms.All:
		b.WriteString("    # The exchange: everything, including JetStream and micro ($SRV) APIs.\n")
		fmt.Fprintf(b, "    { user: %s, password: %q }\n", p.ID, p.Password)
		return nil
	case perms.DenyPublish:
		b.WriteString("\n    # A viewer reads the market data and publishes nothing.\n")
	case p.Role == RoleClient:
		b.WriteString("\n    # Its own bucket of files (" + protocol.FilesBucketOf(p.ID) + ") and the JetStream calls that put them there.\n")
	default:
		b.WriteString("\n")
	}
	fmt.Fprintf(b, "    { user: %s, password: %q, permissions: {\n", p.ID, p.Password)
	if perms.DenyPublish {
		b.WriteString("        publish: { deny: [\">\"] }\n")
	} else {
		fmt.Fprintf(b, "        publish: [%s]\n", quoted(perms.Publish))
	}
	fmt.Fprintf(b, "        subscribe: [%s]\n", quoted(perms.Subscribe))
	if perms.Responses {
		b.WriteString("        allow_responses: true\n")
	}
	b.WriteString("    }}\n")
	return nil
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
