// Package natsauth makes the keys and JWTs of a market run in NATS's
// operator mode (decentralized authentication): an operator, a system
// account, the market's account with its JetStream limits, and a user per
// party whose permissions are those docs/protocol.md gives its role. nsc
// does this for NATS in general; this package does it for a Bourse market
// alone, so that an operator needs nothing but the bourse binary.
//
// Everything lives in one folder: the seeds (*.nk), which are secrets, the
// JWTs, each party's credentials file (<id>.creds), the nats-server
// configuration (nats-server.conf) that trusts the operator and preloads
// the accounts, and the registry of every key issued (issued). Credentials
// expire; Rotate gives a party a new key and Revoke ends its keys, both by
// re-signing the account with its revocations, which a NATS server learns
// on a reload (memory resolver) or from Push (full resolver).
//
// A market may instead log its parties in with passwords: one
// nats-server configuration (PasswordConfig) whose users have the same
// permissions.
package natsauth

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"

	"github.com/bourse/bourse/protocol"
)

// Roles a user can have.
const (
	RoleExchange = "exchange"
	RoleClient   = protocol.RoleClient
	RoleServer   = protocol.RoleServer
	// RoleViewer reads the market data and nothing else: it publishes
	// nothing, so it can neither make requests nor pass for a party. The
	// console's Market page is one (docs/operations.md).
	RoleViewer = "viewer"
)

// Options are the settings of a new market's keys.
type Options struct {
	Operator string // the operator's name, "bourse"
	Account  string // the market's account, "BOURSE"
	// JetStream limits of the market's account: bytes on disk and in
	// memory across its streams, 10 GiB and 1 GiB by default (the usage
	// stream takes up to 1 GiB, docs/operations.md).
	DiskBytes, MemoryBytes int64
	// Resolver is how nats-server learns accounts: "memory" (preloaded
	// from the configuration; the account's JWT never changes here) or
	// "full" (NATS's own resolver, kept in ResolverDir on each server).
	Resolver    string
	ResolverDir string
	Host        string // nats-server's address, 127.0.0.1
	Port        int    // 4222
	// StoreDir is the JetStream store the configuration names
	// (jetstream { store_dir }). Empty leaves it to the command line
	// (nats-server -sd DIR), which nats-server 2.9 (Debian's) cannot
	// reload: a revocation or rotation would then need a restart.
	StoreDir string
	// Expires is how long the exchange's credentials work; never if
	// zero.
	Expires time.Duration
	// Sync is JetStream's sync_interval (JetStreamBlock): SyncAlways if
	// empty, SyncDefault for nats-server before 2.10.
	Sync string
}

func (o *Options) defaults() error {
	if o.Operator == "" {
		o.Operator = "bourse"
	}
	if o.Account == "" {
		o.Account = "BOURSE"
	}
	if o.DiskBytes == 0 {
		o.DiskBytes = 10 << 30
	}
	if o.MemoryBytes == 0 {
		o.MemoryBytes = 1 << 30
	}
	if o.Resolver == "" {
		o.Resolver = "memory"
	}
	if o.Resolver != "memory" && o.Resolver != "full" {
		return fmt.Errorf("resolver %q: want memory or full", o.Resolver)
	}
	if o.Sync == "" {
		o.Sync = SyncAlways
	}
	if err := CheckSync(o.Sync); err != nil {
		return err
	}
	if o.ResolverDir == "" {
		o.ResolverDir = "/var/lib/bourse/nats-jwt"
	}
	if o.Host == "" {
		o.Host = "127.0.0.1"
	}
	if o.Port == 0 {
		o.Port = 4222
	}
	return nil
}

// Init makes the operator, the system account, the market's account and
// the exchange's user in dir, which must not hold a market already, and
// writes nats-server.conf. It returns the files it wrote.
func Init(dir string, o Options) ([]string, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, "operator.nk")); err == nil {
		return nil, fmt.Errorf("%s holds a market's keys already: making new ones would lock out every party", dir)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	w := writer{dir: dir}
	op, err := nkeys.CreateOperator()
	if err != nil {
		return nil, err
	}
	opPub, _ := op.PublicKey()
	sys, sysJWT, err := account(op, "SYS", nil)
	if err != nil {
		return nil, err
	}
	sysPub, _ := sys.PublicKey()
	oc := jwt.NewOperatorClaims(opPub)
	oc.Name = o.Operator
	oc.SystemAccount = sysPub
	opJWT, err := oc.Encode(op)
	if err != nil {
		return nil, fmt.Errorf("operator jwt: %w", err)
	}
	acc, accJWT, err := account(op, o.Account, &jwt.JetStreamLimits{DiskStorage: o.DiskBytes, MemoryStorage: o.MemoryBytes, Streams: -1, Consumer: -1})
	if err != nil {
		return nil, err
	}
	accPub, _ := acc.PublicKey()
	w.seed("operator.nk", op)
	w.seed("sys.nk", sys)
	w.seed("account.nk", acc)
	w.file("operator.jwt", opJWT, 0o644)
	w.file("sys.jwt", sysJWT, 0o644)
	w.file("account.jwt", accJWT, 0o644)
	if w.err != nil {
		return nil, w.err
	}
	var conf strings.Builder
	conf.WriteString(`# nats-server in operator mode for a Bourse market, made by bourse admin
# nats-auth init. Every party connects with its own credentials file
# (bourse admin nats-auth user), whose permissions hold it to its own
# subjects.
`)
	if o.StoreDir != "" {
		fmt.Fprintf(&conf, `# Run it as it is, without -sd: the JetStream store is named here, so that
# nats-server --signal reload takes revocations and rotations (nats-server
# 2.9 refuses to reload a store given on the command line):
#   nats-server -c nats-server.conf
port: %d
host: %s
%s`, o.Port, o.Host, JetStreamBlock(o.StoreDir, o.Sync))
	} else {
		fmt.Fprintf(&conf, `# Run, with the JetStream store on the command line:
#   nats-server -c nats-server.conf -sd /var/lib/bourse/jetstream
# nats-server 2.9 cannot then reload this file: revocations and rotations
# need a restart (bourse admin nats-auth init --store-dir avoids it).
port: %d
host: %s
%s`, o.Port, o.Host, JetStreamBlock("", o.Sync))
	}
	fmt.Fprintf(&conf, `
operator: %q
system_account: %s
`, opJWT, sysPub)
	if o.Resolver == "full" {
		fmt.Fprintf(&conf, `
# NATS's own resolver: accounts live in dir on every server, and account
# JWTs pushed to the system account spread across the cluster.
resolver: {
  type: full
  dir: %q
  allow_delete: false
  interval: "2m"
}
`, o.ResolverDir)
	} else {
		conf.WriteString("\nresolver: MEMORY\n")
	}
	fmt.Fprintf(&conf, "\nresolver_preload: {\n  %s: %q\n  %s: %q\n}\n", sysPub, sysJWT, accPub, accJWT)
	w.file("nats-server.conf", conf.String(), 0o644)
	if w.err != nil {
		return nil, w.err
	}
	creds, err := User(dir, RoleExchange, "exchange", UserOptions{Expires: o.Expires})
	if err != nil {
		return nil, err
	}
	return append(w.wrote, creds), nil
}

// Permissions are what a party of a role may do in NATS: the subjects
// it may publish to (Publish; none at all where DenyPublish), those it may
// subscribe to, and whether it may answer requests sent to it. The
// exchange may do everything in the account (All). Both the credentials'
// JWTs (permit) and the password mode's file (PasswordConfig.Write) are
// written from them, so that the two say the same.
type Permissions struct {
	All         bool
	Publish     []string
	DenyPublish bool
	Subscribe   []string
	Responses   bool
}

// PermissionsOf are docs/protocol.md's "Identity" for party id of role:
// a client or server publishes under its own prefix alone (a client, its
// files into its own bucket too) and reads its deliveries, its inbox and
// the market data; a server answers the exchange's requests.
func PermissionsOf(role, id string) (Permissions, error) {
	switch role {
	case RoleExchange:
		return Permissions{All: true}, nil // JetStream's API, micro's $SRV, every party's deliveries
	case RoleClient, RoleServer:
		p := Permissions{Publish: []string{fmt.Sprintf("%s.%s.%s.>", protocol.Prefix, role, id)},
			// The market data is public: every party may read it.
			Subscribe: []string{protocol.InboxPrefix(id) + ".>", protocol.DeliverSubject(id, ">"), protocol.MarketSubjects}}
		if role == RoleClient {
			p.Publish = append(p.Publish, protocol.FilesSubjects(id)...)
		}
		// A server answers the exchange's offers, starts and controls.
		p.Responses = role == RoleServer
		return p, nil
	case RoleViewer:
		return Permissions{DenyPublish: true, Subscribe: []string{protocol.MarketSubjects}}, nil
	}
	return Permissions{}, fmt.Errorf("role %q: want exchange, client, server or viewer", role)
}

// permit writes role's permissions (PermissionsOf) into a user's claims.
func permit(p *jwt.Permissions, role, id string) error {
	perms, err := PermissionsOf(role, id)
	if err != nil || perms.All {
		return err
	}
	p.Pub.Allow.Add(perms.Publish...)
	if perms.DenyPublish {
		p.Pub.Deny.Add(">")
	}
	p.Sub.Allow.Add(perms.Subscribe...)
	if perms.Responses {
		p.Resp = &jwt.ResponsePermission{MaxMsgs: 1}
	}
	return nil
}

// account makes an account signed by op, with JetStream limits if js is
// set.
func account(op nkeys.KeyPair, name string, js *jwt.JetStreamLimits) (nkeys.KeyPair, string, error) {
	kp, err := nkeys.CreateAccount()
	if err != nil {
		return nil, "", err
	}
	pub, _ := kp.PublicKey()
	ac := jwt.NewAccountClaims(pub)
	ac.Name = name
	if js != nil {
		ac.Limits.JetStreamLimits = *js
	}
	token, err := ac.Encode(op)
	if err != nil {
		return nil, "", fmt.Errorf("account %s jwt: %w", name, err)
	}
	return kp, token, nil
}

// writer writes files into dir until the first error.
type writer struct {
	dir   string
	wrote []string
	err   error
}

func (w *writer) seed(name string, kp nkeys.KeyPair) {
	seed, err := kp.Seed()
	if err != nil {
		w.err = errors.Join(w.err, err)
		return
	}
	w.file(name, string(seed)+"\n", 0o600)
}

func (w *writer) file(name, content string, mode os.FileMode) {
	if w.err != nil {
		return
	}
	path := filepath.Join(w.dir, name)
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		w.err = err
		return
	}
	w.wrote = append(w.wrote, path)
}
