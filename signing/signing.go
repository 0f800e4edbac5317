// Package signing is how a GPU server signs what it says about its
// contracts, and how the exchange checks it: ed25519 signatures made with
// the server's nkey (the same kind of key NATS's operator mode gives each
// user), over the exact bytes of a usage reading, carried in the message's
// Bourse-Sig header (protocol.SigHeader) and kept on the contract's record
// beside those bytes. Anyone with the server's public key can then check
// the statement of use a client was charged for, without trusting the
// exchange.
package signing

import (
	"bufio"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"

	"github.com/bourse/bourse/protocol"
)

// ErrUnsigned and ErrBadSignature are why Verify refuses.
var (
	ErrUnsigned     = errors.New("not signed")
	ErrBadSignature = errors.New("signature does not match the server's key")
	ErrUnknown      = errors.New("no key registered for the server")
)

// Signer signs for one server.
type Signer struct{ kp nkeys.KeyPair }

// Sign returns data's signature, as the header carries it.
func (s Signer) Sign(data []byte) (string, error) {
	sig, err := s.kp.Sign(data)
	if err != nil {
		return "", fmt.Errorf("signing: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(sig), nil
}

// PublicKey is the key Verify needs for this signer.
func (s Signer) PublicKey() string {
	pub, _ := s.kp.PublicKey()
	return pub
}

// LoadSigner reads a signing key: a seed file (an nkey seed, "SU…" or
// "SN…", alone on a line) or a NATS credentials file (operator mode's
// .creds), whose user key then signs too.
func LoadSigner(path string) (Signer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Signer{}, fmt.Errorf("signing key: %w", err)
	}
	var kp nkeys.KeyPair
	if strings.Contains(string(data), "BEGIN NATS USER JWT") {
		kp, err = jwt.ParseDecoratedNKey(data)
	} else {
		kp, err = nkeys.FromSeed([]byte(strings.TrimSpace(string(data))))
	}
	if err != nil {
		return Signer{}, fmt.Errorf("signing key %s: %w", path, err)
	}
	return Signer{kp: kp}, nil
}

// NewKey makes a server's signing key: its seed, to keep on the server,
// and its public key, to register with the exchange.
func NewKey() (seed []byte, public string, err error) {
	kp, err := nkeys.CreateServer()
	if err != nil {
		return nil, "", err
	}
	seed, err = kp.Seed()
	if err != nil {
		return nil, "", err
	}
	public, err = kp.PublicKey()
	return seed, public, err
}

// Keys are the servers' public keys as the exchange registers them. It
// verifies for exchange.Config.Verifier.
type Keys map[string]nkeys.KeyPair

// ReadKeys reads a keys file: a line per server, its id and its public
// key, blank lines and # comments ignored.
func ReadKeys(r io.Reader) (Keys, error) {
	ks := Keys{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, fmt.Errorf("line %d: want a server's id and its public key, got %q", n, line)
		}
		if err := protocol.CheckID(f[0]); err != nil {
			return nil, fmt.Errorf("line %d: server %q: %w", n, f[0], err)
		}
		if _, dup := ks[f[0]]; dup {
			return nil, fmt.Errorf("line %d: %s has a key already", n, f[0])
		}
		kp, err := nkeys.FromPublicKey(f[1])
		if err != nil {
			return nil, fmt.Errorf("line %d: %s's key %q: %w", n, f[0], f[1], err)
		}
		ks[f[0]] = kp
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return ks, nil
}

// LoadKeys reads a keys file from path.
func LoadKeys(path string) (Keys, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("server keys: %w", err)
	}
	defer f.Close()
	ks, err := ReadKeys(f)
	if err != nil {
		return nil, fmt.Errorf("server keys %s: %w", path, err)
	}
	return ks, nil
}

// Verify checks that sig is server's signature of data.
func (ks Keys) Verify(server string, data []byte, sig string) error {
	kp, ok := ks[server]
	switch {
	case !ok:
		return fmt.Errorf("%s: %w", server, ErrUnknown)
	case sig == "":
		return fmt.Errorf("%s: %w", server, ErrUnsigned)
	}
	raw, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || kp.Verify(data, raw) != nil {
		return fmt.Errorf("%s: %w", server, ErrBadSignature)
	}
	return nil
}
