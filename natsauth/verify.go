package natsauth

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/internal/atomicfile"
)

// Probe is the file in a market's folder with the credentials of a key
// the account revokes as it was last signed, and of no party: a NATS
// server that refuses it has taken that account, and so refuses every key
// it revokes (Verify). Its permissions allow nothing, and it never
// expires, so that the check means the same a year on.
const Probe = "revocation-probe"

// ErrNotTaken is Verify's error for a NATS server that still accepts a
// key the account revokes: it has not taken the account as last signed.
var ErrNotTaken = errors.New("the NATS server has not taken the account as last signed")

// probe makes a key of no party, signed by the account key in dir, writes
// its credentials to Probe, and returns its public key for the caller to
// revoke in the account it signs next. The file is written first: should
// the account not follow, the probe is revoked nowhere and Verify says
// the change was not taken, which is the truth.
func probe(dir string) (string, error) {
	acc, err := accountKey(dir)
	if err != nil {
		return "", err
	}
	u, err := nkeys.CreateUser()
	if err != nil {
		return "", err
	}
	pub, _ := u.PublicKey()
	accPub, _ := acc.PublicKey()
	uc := jwt.NewUserClaims(pub)
	uc.Name = "revocation-probe"
	uc.IssuerAccount = accPub
	uc.Pub.Deny.Add(">")
	uc.Sub.Deny.Add(">")
	token, err := uc.Encode(acc)
	if err != nil {
		return "", fmt.Errorf("probe jwt: %w", err)
	}
	seed, _ := u.Seed()
	creds, err := jwt.FormatUserConfig(token, seed)
	if err != nil {
		return "", err
	}
	if err := atomicfile.Write(filepath.Join(dir, Probe), creds, 0o600); err != nil {
		return "", err
	}
	return pub, nil
}

// Verify checks that the NATS server at url has taken the market's
// account as last signed (after Revoke or Rotate, and a reload or Push):
// a key of the account that nothing revokes connects, and the probe key
// the last signing revoked (Probe) is refused. It returns nil if so;
// ErrNotTaken (wrapped, with what to do) if the probe still connects; a
// *bourse.Error with code unavailable if NATS does not answer; and an
// error saying so if the server refuses the account's keys altogether.
func Verify(ctx context.Context, dir, url string, opts ...nats.Option) error {
	acc, err := accountKey(dir)
	if err != nil {
		return err
	}
	// A key that nothing revokes, for the moment: that it connects shows
	// the server answers and knows the account, so that the probe's
	// refusal below means its revocation.
	u, err := nkeys.CreateUser()
	if err != nil {
		return err
	}
	pub, _ := u.PublicKey()
	accPub, _ := acc.PublicKey()
	uc := jwt.NewUserClaims(pub)
	uc.Name = "bourse-verify"
	uc.IssuerAccount = accPub
	uc.Pub.Deny.Add(">")
	uc.Sub.Deny.Add(">")
	uc.Expires = time.Now().Add(time.Minute).Unix()
	token, err := uc.Encode(acc)
	if err != nil {
		return err
	}
	seed, _ := u.Seed()
	if err := connect(ctx, url, append(opts, nats.UserJWTAndSeed(token, string(seed)))); err != nil {
		if refused(err) {
			return fmt.Errorf("the NATS server at %s refuses the market's account altogether (%w): is it the server of %s, run with its nats-server.conf?", url, err, dir)
		}
		return &bourse.Error{Code: bourse.EUnavailable, Message: fmt.Sprintf("no NATS server answers at %s", url), Err: err}
	}
	path := filepath.Join(dir, Probe)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil // the account was never signed again: it revokes nothing
	}
	err = connect(ctx, url, append(opts, nats.UserCredentials(path)))
	switch {
	case err == nil:
		return fmt.Errorf("%w: the NATS server at %s still accepts a key the account revokes. "+
			"With the memory resolver, reload it (nats-server --signal reload) and look in its log for \"Failed to reload\": "+
			"nats-server 2.9 cannot reload a server whose JetStream store was given with -sd, so put the store in its configuration "+
			"(jetstream { store_dir: … }, what bourse admin nats-auth init --store-dir writes), start it without -sd and restart it once. "+
			"With the full resolver, push the account (bourse admin nats-auth push)", ErrNotTaken, url)
	case refused(err):
		return nil
	}
	return &bourse.Error{Code: bourse.EUnavailable, Message: fmt.Sprintf("the NATS server at %s did not answer the check", url), Err: err}
}

// connect connects to url with opts and closes the connection.
func connect(ctx context.Context, url string, opts []nats.Option) error {
	timeout := 5 * time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(d), 100*time.Millisecond)
	}
	nc, err := nats.Connect(url, append(opts, nats.Name("bourse-verify"), nats.NoReconnect(), nats.Timeout(timeout))...)
	if err != nil {
		return err
	}
	nc.Close()
	return nil
}

// refused says whether a connection failed for its credentials.
func refused(err error) bool {
	if errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) || errors.Is(err, nats.ErrAuthRevoked) {
		return true
	}
	return strings.Contains(strings.ToLower(err.Error()), "authorization violation")
}

// FullResolver says whether dir's nats-server.conf has NATS's full
// resolver, whose servers learn the account from Push rather than a
// reload.
func FullResolver(dir string) (bool, error) {
	conf, err := os.ReadFile(filepath.Join(dir, "nats-server.conf"))
	if err != nil {
		return false, err
	}
	return strings.Contains(string(conf), "\n  type: full\n"), nil
}
