package natsauth

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/bourse/bourse/internal/atomicfile"
)

// updateAccount signs the market's account again, with change, by the
// operator's key, and writes it to account.jwt and in place of the old one
// in nats-server.conf's resolver_preload. A NATS server with the memory
// resolver learns it on a reload (nats-server --signal reload); with the
// full resolver, Push sends it. Each signing revokes a new probe key too
// (Probe), by which Verify tells whether a server has taken it.
func updateAccount(dir string, change func(*jwt.AccountClaims)) error {
	opSeed, err := os.ReadFile(filepath.Join(dir, "operator.nk"))
	if err != nil {
		return fmt.Errorf("the operator's key signs the account: %w", err)
	}
	op, err := nkeys.FromSeed(bytes.TrimSpace(opSeed))
	if err != nil {
		return fmt.Errorf("operator.nk: %w", err)
	}
	oldJWT, err := os.ReadFile(filepath.Join(dir, "account.jwt"))
	if err != nil {
		return err
	}
	old := strings.TrimSpace(string(oldJWT))
	ac, err := jwt.DecodeAccountClaims(old)
	if err != nil {
		return fmt.Errorf("account.jwt: %w", err)
	}
	change(ac)
	// A key revoked in this signing and no other, for Verify to try.
	probe, err := probe(dir)
	if err != nil {
		return err
	}
	ac.RevokeAt(probe, time.Now())
	token, err := ac.Encode(op)
	if err != nil {
		return fmt.Errorf("account jwt: %w", err)
	}
	confPath := filepath.Join(dir, "nats-server.conf")
	conf, err := os.ReadFile(confPath)
	if err != nil {
		return err
	}
	if !bytes.Contains(conf, []byte(old)) {
		return fmt.Errorf("%s does not preload account.jwt: was it edited? Put the account's JWT back in its resolver_preload", confPath)
	}
	if err := atomicfile.Write(filepath.Join(dir, "account.jwt"), []byte(token), 0o644); err != nil {
		return err
	}
	return atomicfile.Write(confPath, bytes.ReplaceAll(conf, []byte(old), []byte(token)), 0o644)
}

// Push sends the market's account (account.jwt) to the NATS servers at
// url, which keep it: what a cluster on the full resolver needs after a
// revocation or rotation. It connects as a user of the system account
// made for the moment (a minute long) with sys.nk.
func Push(ctx context.Context, dir, url string, opts ...nats.Option) error {
	sysSeed, err := os.ReadFile(filepath.Join(dir, "sys.nk"))
	if err != nil {
		return fmt.Errorf("the system account's key: %w", err)
	}
	sys, err := nkeys.FromSeed(bytes.TrimSpace(sysSeed))
	if err != nil {
		return fmt.Errorf("sys.nk: %w", err)
	}
	u, err := nkeys.CreateUser()
	if err != nil {
		return err
	}
	uPub, _ := u.PublicKey()
	uc := jwt.NewUserClaims(uPub)
	uc.Name = "bourse-push"
	uc.Expires = time.Now().Add(time.Minute).Unix()
	token, err := uc.Encode(sys)
	if err != nil {
		return err
	}
	seed, _ := u.Seed()
	account, err := os.ReadFile(filepath.Join(dir, "account.jwt"))
	if err != nil {
		return err
	}
	nc, err := nats.Connect(url, append([]nats.Option{nats.Name("bourse-push"), nats.UserJWTAndSeed(token, string(seed))}, opts...)...)
	if err != nil {
		return fmt.Errorf("connect to NATS at %s as the system account: %w", url, err)
	}
	defer nc.Close()
	msg, err := nc.RequestWithContext(ctx, "$SYS.REQ.CLAIMS.UPDATE", bytes.TrimSpace(account))
	if err != nil {
		return fmt.Errorf("push the account: %w", err)
	}
	var reply struct {
		Error *struct {
			Code        int    `json:"code"`
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(msg.Data, &reply); err != nil {
		return fmt.Errorf("push the account: the server's answer %q: %w", msg.Data, err)
	}
	if reply.Error != nil {
		return fmt.Errorf("push the account: %d %s", reply.Error.Code, reply.Error.Description)
	}
	return nil
}
