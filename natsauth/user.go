package natsauth

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"

	"github.com/bourse/bourse/internal/atomicfile"
	"github.com/bourse/bourse/protocol"
)

// UserOptions are the settings of a party's credentials.
type UserOptions struct {
	// Expires is how long the credentials work: nats-server refuses them
	// afterwards and closes a connection made with them when they expire.
	// Never if zero.
	Expires time.Duration
}

// User makes the credentials file of a party of role in dir, signed by
// the market's account: a client or server held to its own subjects, or
// the exchange, which may use every subject of the account. An id issued
// before, in any role, is refused: Rotate gives its party a new key. It
// returns the file's path.
func User(dir, role, id string, o UserOptions) (string, error) {
	if err := protocol.CheckID(id); err != nil {
		return "", fmt.Errorf("%s %q: %w", role, id, err)
	}
	if err := permit(&jwt.Permissions{}, role, id); err != nil {
		return "", err
	}
	reg, acc, unlock, err := open(dir)
	if err != nil {
		return "", err
	}
	defer unlock()
	if err := reg.claim(role, id); err != nil {
		return "", err
	}
	path := filepath.Join(dir, id+".creds")
	if _, err := os.Stat(path); err == nil {
		return "", fmt.Errorf("%s exists, though the registry never issued %q: remove it, or find out who made it", path, id)
	}
	u, creds, err := sign(acc, role, id, o)
	if err != nil {
		return "", err
	}
	// The registry first: should writing the credentials fail, the id
	// stays claimed, and Rotate issues it a key.
	reg.entries = append(reg.entries, u)
	if err := reg.save(); err != nil {
		return "", err
	}
	if err := atomicfile.Write(path, creds, 0o600); err != nil {
		return "", err
	}
	if role == RoleServer {
		// Its user key signs its readings too: the exchange reads this
		// file with --server-keys.
		if err := setServerKey(dir, id, u.Key); err != nil {
			return "", err
		}
	}
	return path, nil
}

// Rotate gives the party id (issued before, whatever became of it) a new
// key: a new credentials file in place of its old one, its new key in
// server-keys for a server, and its old keys revoked in the account,
// which takes effect when the NATS servers learn the account again
// (docs/operations.md, "Credentials"). It returns the file's path.
func Rotate(dir, id string, o UserOptions) (string, error) {
	reg, acc, unlock, err := open(dir)
	if err != nil {
		return "", err
	}
	defer unlock()
	es := reg.issued(id)
	if len(es) == 0 {
		return "", fmt.Errorf("%q was never issued: bourse admin nats-auth user makes its first credentials", id)
	}
	role := es[0].Role
	u, creds, err := sign(acc, role, id, o)
	if err != nil {
		return "", err
	}
	if err := reg.revoke(dir, id, u.At); err != nil {
		return "", err
	}
	reg.entries = append(reg.entries, u)
	if err := reg.save(); err != nil {
		return "", err
	}
	path := filepath.Join(dir, id+".creds")
	if err := atomicfile.Write(path, creds, 0o600); err != nil {
		return "", err
	}
	if role == RoleServer {
		if err := setServerKey(dir, id, u.Key); err != nil {
			return "", err
		}
	}
	return path, nil
}

// Revoke revokes every key of the party id in the account, removes its
// credentials file and, for a server, its key from server-keys. nats-server
// refuses the keys, and closes their connections, once it learns the
// account again. The id stays the party's: Rotate issues it a new key.
func Revoke(dir, id string) error {
	reg, _, unlock, err := open(dir)
	if err != nil {
		return err
	}
	defer unlock()
	if len(reg.issued(id)) == 0 {
		return fmt.Errorf("%q was never issued", id)
	}
	if len(reg.live(id)) == 0 {
		return fmt.Errorf("%q has no key that is not revoked already", id)
	}
	if err := reg.revoke(dir, id, time.Now()); err != nil {
		return err
	}
	if err := reg.save(); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(dir, id+".creds")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return setServerKey(dir, id, "")
}

// List is every key the account has signed, oldest first.
func List(dir string) ([]Issued, error) {
	reg, _, unlock, err := open(dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return reg.entries, nil
}

// open locks dir and reads its registry and the account's key, which
// signs users; unlock releases the folder.
func open(dir string) (reg *registry, acc nkeys.KeyPair, unlock func(), err error) {
	if acc, err = accountKey(dir); err != nil {
		return nil, nil, nil, err
	}
	if unlock, err = lock(dir); err != nil {
		return nil, nil, nil, err
	}
	if reg, err = loadRegistry(dir); err != nil {
		unlock()
		return nil, nil, nil, err
	}
	return reg, acc, unlock, nil
}

// accountKey is the market's account key, which signs users.
func accountKey(dir string) (nkeys.KeyPair, error) {
	seed, err := os.ReadFile(filepath.Join(dir, "account.nk"))
	if err != nil {
		return nil, fmt.Errorf("the market's account key: %w (run bourse admin nats-auth init first)", err)
	}
	acc, err := nkeys.FromSeed(bytes.TrimSpace(seed))
	if err != nil {
		return nil, fmt.Errorf("account.nk: %w", err)
	}
	return acc, nil
}

// sign makes a new user key for the party and its credentials file's
// content, signed by acc.
func sign(acc nkeys.KeyPair, role, id string, o UserOptions) (Issued, []byte, error) {
	accPub, _ := acc.PublicKey()
	u, err := nkeys.CreateUser()
	if err != nil {
		return Issued{}, nil, err
	}
	uPub, _ := u.PublicKey()
	uc := jwt.NewUserClaims(uPub)
	uc.Name = id
	uc.IssuerAccount = accPub
	if err := permit(&uc.Permissions, role, id); err != nil {
		return Issued{}, nil, err
	}
	now := time.Now()
	e := Issued{ID: id, Role: role, Key: uPub, At: now.Truncate(time.Second)}
	if o.Expires > 0 {
		e.Expires = now.Add(o.Expires).Truncate(time.Second)
		uc.Expires = e.Expires.Unix()
	}
	token, err := uc.Encode(acc)
	if err != nil {
		return Issued{}, nil, fmt.Errorf("user jwt: %w", err)
	}
	seed, _ := u.Seed()
	creds, err := jwt.FormatUserConfig(token, seed)
	return e, creds, err
}

// ServerKeys is the file in dir of the servers' public keys, for
// bourse exchange --server-keys (package signing reads it).
const ServerKeys = "server-keys"

const serverKeysHead = "# GPU servers' public keys, for bourse exchange --server-keys: readings must carry their server's signature\n"

// setServerKey makes pub server id's one key in server-keys, or removes
// id's line if pub is empty.
func setServerKey(dir, id, pub string) error {
	path := filepath.Join(dir, ServerKeys)
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	var b strings.Builder
	if len(old) == 0 {
		b.WriteString(serverKeysHead)
	}
	for _, line := range strings.SplitAfter(string(old), "\n") {
		if fs := strings.Fields(line); line == "" || len(fs) == 2 && fs[0] == id {
			continue
		}
		b.WriteString(line)
		if !strings.HasSuffix(line, "\n") {
			b.WriteByte('\n')
		}
	}
	if pub != "" {
		fmt.Fprintf(&b, "%s %s\n", id, pub)
	}
	return atomicfile.Write(path, []byte(b.String()), 0o644)
}
