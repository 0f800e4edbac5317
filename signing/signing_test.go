package signing_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/signing"
)

func TestSignVerify(t *testing.T) {
	seed, pub, err := signing.NewKey()
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "gpu1.nk")
	require.NoError(t, os.WriteFile(path, append(seed, '\n'), 0o600))
	s, err := signing.LoadSigner(path)
	require.NoError(t, err)
	assert.Equal(t, pub, s.PublicKey())

	keys, err := signing.ReadKeys(strings.NewReader("gpu1 " + pub + "\n\n# gpu2 is not here\n"))
	require.NoError(t, err)
	body := []byte(`{"contract":"c-1","seq":3,"u":"1.5"}`)
	sig, err := s.Sign(body)
	require.NoError(t, err)
	assert.NoError(t, keys.Verify("gpu1", body, sig))
	assert.ErrorIs(t, keys.Verify("gpu1", []byte(`{"contract":"c-1","seq":3,"u":"9.5"}`), sig), signing.ErrBadSignature)
	assert.ErrorIs(t, keys.Verify("gpu1", body, ""), signing.ErrUnsigned)
	assert.ErrorIs(t, keys.Verify("gpu1", body, "!!"), signing.ErrBadSignature)
	assert.ErrorIs(t, keys.Verify("gpu2", body, sig), signing.ErrUnknown)
}

// TestCredsSign: in operator mode a server's credentials file signs too,
// with the user key NATS knows it by.
func TestCredsSign(t *testing.T) {
	acc, _ := nkeys.CreateAccount()
	u, _ := nkeys.CreateUser()
	upub, _ := u.PublicKey()
	token, err := jwt.NewUserClaims(upub).Encode(acc)
	require.NoError(t, err)
	seed, _ := u.Seed()
	creds, err := jwt.FormatUserConfig(token, seed)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "gpu1.creds")
	require.NoError(t, os.WriteFile(path, creds, 0o600))
	s, err := signing.LoadSigner(path)
	require.NoError(t, err)
	assert.Equal(t, upub, s.PublicKey())
}

func TestReadKeysErrors(t *testing.T) {
	_, pub, _ := signing.NewKey()
	for _, tt := range []struct{ text, want string }{
		{"gpu1\n", "line 1: want a server's id and its public key"},
		{"gpu1 NOTAKEY\n", `line 1: gpu1's key "NOTAKEY"`},
		{"gpu1 " + pub + "\ngpu1 " + pub + "\n", "line 2: gpu1 has a key already"},
		{"Gpu.1 " + pub + "\n", `line 1: server "Gpu.1"`},
	} {
		_, err := signing.ReadKeys(strings.NewReader(tt.text))
		assert.ErrorContains(t, err, tt.want)
	}
	_, err := signing.LoadSigner(filepath.Join(t.TempDir(), "none"))
	assert.ErrorContains(t, err, "signing key")
}

// TestKeyFileReload: a rotated server's new key verifies after Reload,
// its old one no longer; a file broken meanwhile keeps the keys read
// before.
func TestKeyFileReload(t *testing.T) {
	oldSeed, oldPub, err := signing.NewKey()
	require.NoError(t, err)
	newSeed, newPub, err := signing.NewKey()
	require.NoError(t, err)
	dir := t.TempDir()
	signer := func(seed []byte) signing.Signer {
		path := filepath.Join(dir, "k.nk")
		require.NoError(t, os.WriteFile(path, seed, 0o600))
		s, err := signing.LoadSigner(path)
		require.NoError(t, err)
		return s
	}
	body := []byte(`{"contract":"c-1","seq":1}`)
	oldSig, err := signer(oldSeed).Sign(body)
	require.NoError(t, err)
	newSig, err := signer(newSeed).Sign(body)
	require.NoError(t, err)

	path := filepath.Join(dir, "server-keys")
	require.NoError(t, os.WriteFile(path, []byte("gpu1 "+oldPub+"\n"), 0o644))
	f, err := signing.OpenKeyFile(path)
	require.NoError(t, err)
	assert.NoError(t, f.Verify("gpu1", body, oldSig))
	assert.ErrorIs(t, f.Verify("gpu1", body, newSig), signing.ErrBadSignature)

	require.NoError(t, os.WriteFile(path, []byte("gpu1 "+newPub+"\n"), 0o644))
	require.NoError(t, f.Reload())
	assert.NoError(t, f.Verify("gpu1", body, newSig), "the new key, without a restart")
	assert.ErrorIs(t, f.Verify("gpu1", body, oldSig), signing.ErrBadSignature, "the old key no longer")

	require.NoError(t, os.WriteFile(path, []byte("gpu1 "+newPub+"\ngpu1 "+oldPub+"\n"), 0o644))
	assert.ErrorContains(t, f.Reload(), "has a key already")
	assert.NoError(t, f.Verify("gpu1", body, newSig), "the keys read before stay")
	assert.Equal(t, 1, f.Len())
}
