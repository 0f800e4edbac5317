package exchange_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/housetest"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/signing"
)

// signer makes a signing key in a file and loads it, and returns its
// signing function as housetest.Router.Sign takes it.
func signer(t *testing.T) (signing.Signer, func([]byte) string) {
	t.Helper()
	seed, _, err := signing.NewKey()
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "key.nk")
	require.NoError(t, os.WriteFile(path, seed, 0o600))
	s, err := signing.LoadSigner(path)
	require.NoError(t, err)
	return s, func(b []byte) string {
		sig, err := s.Sign(b)
		require.NoError(t, err)
		return sig
	}
}

// TestSignedReadings: where the exchange requires signatures, a reading
// unsigned or signed with another key is refused, even a final one that
// would charge the client more, and the contract settles from the good
// ones; its record keeps the final reading's bytes and signature, which
// check out with the server's public key alone. Another server's own
// signature does not make its word count for gpu1's contract.
func TestSignedReadings(t *testing.T) {
	gpu1Key, gpu1Sign := signer(t)
	gpu2Key, gpu2Sign := signer(t)
	_, forged := signer(t)
	keys, err := signing.ReadKeys(strings.NewReader("# server keys\ngpu1 " + gpu1Key.PublicKey() + "\ngpu2 " + gpu2Key.PublicKey() + "\n"))
	require.NoError(t, err)
	ctx := context.Background()
	h := housetest.New(t, exchange.Config{Verifier: keys})
	h.Server("gpu1", "H100", 1, nil)
	h.Router.Sign("gpu1", gpu1Sign)
	h.Wallet("alice", "100")
	tm := job(1, "0.01")
	reply := offer(t, h, "alice", "r1", tm, 0)
	require.NotNil(t, reply.Contract, "%+v", reply)
	c := contractOf(t, h, "alice", reply.Contract.ID)
	require.NotNil(t, c.AcceptSigned, "the accept's proof is on the contract")
	assert.NoError(t, keys.Verify("gpu1", c.AcceptSigned.Body, c.AcceptSigned.Sig))
	var so protocol.ServerOffer
	require.NoError(t, json.Unmarshal(c.AcceptSigned.Body[:bytes.IndexByte(c.AcceptSigned.Body, '\n')], &so))
	assert.True(t, so.Terms.Prepayment.Equal(c.Terms.Prepayment), "the signed accept names the terms accepted")

	h.Run(5*time.Second, time.Second) // gpu1's signed readings
	c = contractOf(t, h, "alice", c.ID)
	require.NotNil(t, c.Reading, "the signed readings counted")
	counted := c.Reading.Seq
	send := func(server string, r contract.Reading, sign func([]byte) string) error {
		body, err := protocol.Marshal(r)
		require.NoError(t, err)
		return h.House.Reading(ctx, server, r.Contract, protocol.MsgID(server, r), body, sign(body))
	}
	lie := read(c.ID, counted+1, "5", 5*time.Second, h.Now(), false)
	assert.Error(t, send("gpu1", lie, func([]byte) string { return "" }), "unsigned")
	lie.Seq, lie.Final, lie.Reason = counted+2, true, contract.ReasonCompleted
	assert.Error(t, send("gpu1", lie, forged), "a forged final, for more than ran")
	// gpu2 signs with its own, registered key, but for gpu1's contract:
	// it can publish only on its own subject, and is not believed there.
	lie.Seq = counted + 3
	assert.Error(t, send("gpu2", lie, gpu2Sign), "gpu2's word for gpu1's contract")
	got := contractOf(t, h, "alice", c.ID)
	assert.Equal(t, counted, got.Reading.Seq, "the unsigned and the forged readings were counted")
	assert.Equal(t, contract.StateRunning, got.State)

	h.Run(time.Minute, time.Second) // the job ends: its signed final reading
	settled := contractOf(t, h, "alice", c.ID)
	require.True(t, settled.Reading.Final)
	chargedFor(t, settled, contract.ReasonCompleted, settled.Reading.Usage())
	require.NotNil(t, settled.Signed)
	require.NoError(t, keys.Verify("gpu1", settled.Signed.Body, settled.Signed.Sig), "the record's proof checks out")
	var proved contract.Reading
	require.NoError(t, json.Unmarshal(settled.Signed.Body, &proved))
	assert.True(t, proved.U.Equal(settled.Reading.U), "the signed bytes say the U charged for")
	assert.ErrorIs(t, keys.Verify("gpu1", append([]byte(" "), settled.Signed.Body...), settled.Signed.Sig), signing.ErrBadSignature)
	noOpenHold(t, h)
}

// TestSignedAccepts: where the exchange requires signatures, an accept
// unsigned, or signed by another key, makes no contract: the offer is
// refused with the reason, the server's claim cancelled, nothing
// escrowed.
func TestSignedAccepts(t *testing.T) {
	gpu1Key, _ := signer(t)
	_, forged := signer(t)
	keys, err := signing.ReadKeys(strings.NewReader("gpu1 " + gpu1Key.PublicKey() + "\n"))
	require.NoError(t, err)
	h := housetest.New(t, exchange.Config{Verifier: keys})
	node := h.Server("gpu1", "H100", 1, nil)
	h.Wallet("alice", "100")
	for _, tc := range []struct {
		name string
		sign func([]byte) string
	}{
		{"Unsigned", nil},
		{"Forged", forged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.Router.Sign("gpu1", tc.sign)
			r := offer(t, h, "alice", "acc-"+tc.name, job(1, "0.01"), 0)
			assert.Nil(t, r.Contract)
			require.Len(t, r.Rejections, 1)
			assert.Contains(t, r.Rejections[0].Reason, "accept refused")
			assert.Equal(t, 1, node.Hello(h.Now()).Free, "the server's claim cancelled")
		})
	}
	assert.True(t, h.Balance(currency.WalletID(housetest.Currency, "alice")).Held.IsZero(), "nothing escrowed")
}
