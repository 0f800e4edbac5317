package natsvc_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/signing"
)

// signer makes a signing key in a file and loads it.
func signer(t *testing.T) signing.Signer {
	t.Helper()
	seed, _, err := signing.NewKey()
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "key.nk")
	require.NoError(t, os.WriteFile(path, seed, 0o600))
	s, err := signing.LoadSigner(path)
	require.NoError(t, err)
	return s
}

// publishSigned publishes r with sig in its Bourse-Sig header ("" for
// none).
func (s *scripted) publishSigned(r contract.Reading, sig func([]byte) string) {
	s.t.Helper()
	body, _ := json.Marshal(r)
	msg := nats.NewMsg(protocol.UsageSubject(s.id, r.Contract))
	msg.Data = body
	if v := sig(body); v != "" {
		msg.Header.Set(protocol.SigHeader, v)
	}
	_, err := s.js.PublishMsg(context.Background(), msg, jetstream.WithMsgID(protocol.MsgID(s.id, r)))
	require.NoError(s.t, err)
}

func (s *scripted) setSign(f func([]byte) string) { s.sign.Store(&f) }

// TestSignaturesTravel: where the exchange requires signatures, they
// travel in the Bourse-Sig header: an accept signed in its reply's
// header makes a contract that keeps the proof, a reading signed in its
// message's header counts and settles the contract, kept with its
// signature, and a reading without the header is refused. Which
// signatures the House believes is its rule, tested on its own
// (exchange/signed_test.go).
func TestSignaturesTravel(t *testing.T) {
	gpu1Key := signer(t)
	keys, err := signing.ReadKeys(strings.NewReader("gpu1 " + gpu1Key.PublicKey() + "\n"))
	require.NoError(t, err)
	m := newMarket(t, func(c *exchange.Config) { honest(c); c.Verifier = keys })
	m.wallet("alice", "100")
	sign := func(b []byte) string {
		sig, err := gpu1Key.Sign(b)
		require.NoError(t, err)
		return sig
	}
	srv := m.scriptedServer("gpu1", 1, accept)
	srv.setSign(sign)
	c := m.running(m.client("alice"), terms("alice"))
	require.NotNil(t, c.AcceptSigned, "the accept's proof is on the contract")
	assert.NoError(t, keys.Verify("gpu1", c.AcceptSigned.Body, c.AcceptSigned.Sig))

	at := time.Now().UTC()
	read := func(seq uint64, u string) contract.Reading {
		return contract.Reading{Contract: c.ID, Seq: seq, U: dectest.D(u), T: contract.Duration(200 * time.Millisecond), S: dectest.D("1"),
			At: at, Final: true, Reason: contract.ReasonCompleted}
	}
	srv.publishSigned(read(1, "0.2"), func([]byte) string { return "" }) // no header: refused
	final := read(2, "0.15")
	srv.publishSigned(final, sign)
	settled := m.settled(c.ID, 5*time.Second)
	chargedFor(t, settled, contract.ReasonCompleted, final.Usage())
	require.NotNil(t, settled.Signed)
	require.NoError(t, keys.Verify("gpu1", settled.Signed.Body, settled.Signed.Sig), "the record's proof checks out")
	m.noOpenHold()
}
