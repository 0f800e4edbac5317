package natsvc_test

import (
	"bytes"
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
	"github.com/bourse/bourse/currency"
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

// TestSignedReadings: where the exchange requires signatures, a reading
// unsigned or signed with another key is refused, even a final one that
// would charge the client more, and the contract settles from the good
// ones; its record keeps the final reading's bytes and signature, which
// check out with the server's public key alone. Another server's own
// signature does not make its word count for gpu1's contract.
func TestSignedReadings(t *testing.T) {
	gpu1Key, gpu2Key, forger := signer(t), signer(t), signer(t)
	keys, err := signing.ReadKeys(strings.NewReader("# server keys\ngpu1 " + gpu1Key.PublicKey() + "\ngpu2 " + gpu2Key.PublicKey() + "\n"))
	require.NoError(t, err)
	m := newMarket(t, func(c *exchange.Config) { honest(c); c.Verifier = keys })
	m.wallet("alice", "100")
	sign := func(s signing.Signer) func([]byte) string {
		return func(b []byte) string {
			sig, err := s.Sign(b)
			require.NoError(t, err)
			return sig
		}
	}
	srv := m.scriptedServer("gpu1", 1, accept)
	srv.setSign(sign(gpu1Key))
	alice := m.client("alice")
	c := m.running(alice, terms("alice"))
	require.NotNil(t, c.AcceptSigned, "the accept's proof is on the contract")
	assert.NoError(t, keys.Verify("gpu1", c.AcceptSigned.Body, c.AcceptSigned.Sig))
	var offer protocol.ServerOffer
	require.NoError(t, json.Unmarshal(c.AcceptSigned.Body[:bytes.IndexByte(c.AcceptSigned.Body, '\n')], &offer))
	assert.True(t, offer.Terms.Prepayment.Equal(c.Terms.Prepayment), "the signed accept names the terms accepted")
	none := func([]byte) string { return "" }
	at := time.Now().UTC()
	read := func(seq uint64, u string, final bool) contract.Reading {
		r := contract.Reading{Contract: c.ID, Seq: seq, U: dectest.D(u), T: contract.Duration(200 * time.Millisecond), S: dectest.D("1"), At: at, Final: final}
		if final {
			r.Reason = contract.ReasonCompleted
		}
		return r
	}
	srv.publishSigned(read(1, "0.1", false), sign(gpu1Key))
	waitFor(t, "the signed reading counted", func() bool { r := m.contract(c.ID).Reading; return r != nil && r.Seq == 1 })
	srv.publishSigned(read(2, "0.2", false), none)
	srv.publishSigned(read(3, "0.2", true), sign(forger)) // a forged final, for more than ran
	// gpu2 signs with its own, registered key, but for gpu1's contract:
	// it can publish only on its own subject, and is not believed there.
	other := m.scriptedServer("gpu2", 1, accept)
	other.publishSigned(read(5, "0.9", true), sign(gpu2Key))
	time.Sleep(200 * time.Millisecond)
	got := m.contract(c.ID)
	assert.Equal(t, uint64(1), got.Reading.Seq, "the unsigned and the forged readings were counted")
	assert.Equal(t, contract.StateRunning, got.State)

	final := read(4, "0.15", true)
	srv.publishSigned(final, sign(gpu1Key))
	settled := m.settled(c.ID, 5*time.Second)
	chargedFor(t, settled, contract.ReasonCompleted, final.Usage())
	require.NotNil(t, settled.Signed)
	require.NoError(t, keys.Verify("gpu1", settled.Signed.Body, settled.Signed.Sig), "the record's proof checks out")
	var proved contract.Reading
	require.NoError(t, json.Unmarshal(settled.Signed.Body, &proved))
	assert.True(t, proved.U.Equal(settled.Reading.U), "the signed bytes say the U charged for")
	assert.ErrorIs(t, keys.Verify("gpu1", append([]byte(" "), settled.Signed.Body...), settled.Signed.Sig), signing.ErrBadSignature)
	m.noOpenHold()
}

// TestSignedAccepts: where the exchange requires signatures, an accept
// unsigned, or signed by another key, makes no contract: the offer is
// refused with the reason, the server's claim cancelled, nothing escrowed.
func TestSignedAccepts(t *testing.T) {
	gpu1Key, forger := signer(t), signer(t)
	keys, err := signing.ReadKeys(strings.NewReader("gpu1 " + gpu1Key.PublicKey() + "\n"))
	require.NoError(t, err)
	m := newMarket(t, func(c *exchange.Config) { c.Verifier = keys })
	m.wallet("alice", "100")
	srv := m.scriptedServer("gpu1", 1, accept)
	alice := m.client("alice")
	for _, tc := range []struct {
		name string
		sign func([]byte) string
	}{
		{"Unsigned", nil},
		{"Forged", func(b []byte) string { s, _ := forger.Sign(b); return s }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv.setSign(tc.sign)
			r, err := alice.Offer(context.Background(), "acc-"+tc.name, terms("alice"))
			require.NoError(t, err)
			assert.Nil(t, r.Contract)
			require.Len(t, r.Rejections, 1)
			assert.Contains(t, r.Rejections[0].Reason, "accept refused")
		})
	}
	assert.True(t, m.balance(currency.WalletID(cred, "alice")).Held.IsZero(), "nothing escrowed")
}

func (s *scripted) setSign(f func([]byte) string) { s.sign.Store(&f) }
