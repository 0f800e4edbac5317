package natstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TLSFiles are PEM files a test made: a CA, a certificate for a NATS
// server on 127.0.0.1 and localhost, and a client certificate, each
// signed by the CA.
type TLSFiles struct {
	CA, ServerCert, ServerKey, ClientCert, ClientKey string
}

// MakeTLS writes a fresh CA and the certificates it signs into t.TempDir().
func MakeTLS(t testing.TB) TLSFiles {
	t.Helper()
	dir := t.TempDir()
	caKey, caCert, caDER := newCert(t, "bourse test CA", nil, nil, func(c *x509.Certificate) {
		c.IsCA, c.BasicConstraintsValid = true, true
		c.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	})
	f := TLSFiles{CA: filepath.Join(dir, "ca.pem")}
	writePEM(t, f.CA, "CERTIFICATE", caDER)
	write := func(name string, key *ecdsa.PrivateKey, der []byte) (cert, keyFile string) {
		cert, keyFile = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
		writePEM(t, cert, "CERTIFICATE", der)
		kb, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatalf("natstest: key: %v", err)
		}
		writePEM(t, keyFile, "EC PRIVATE KEY", kb)
		return cert, keyFile
	}
	sk, _, sDER := newCert(t, "nats", caCert, caKey, func(c *x509.Certificate) {
		c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		c.DNSNames, c.IPAddresses = []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)}
	})
	f.ServerCert, f.ServerKey = write("server", sk, sDER)
	ck, _, cDER := newCert(t, "bourse party", caCert, caKey, func(c *x509.Certificate) {
		c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	})
	f.ClientCert, f.ClientKey = write("client", ck, cDER)
	return f
}

func newCert(t testing.TB, cn string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, tune func(*x509.Certificate)) (*ecdsa.PrivateKey, *x509.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("natstest: key: %v", err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	c := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature}
	tune(c)
	signer, signKey := c, key
	if parent != nil {
		signer, signKey = parent, parentKey
	}
	der, err := x509.CreateCertificate(rand.Reader, c, signer, &key.PublicKey, signKey)
	if err != nil {
		t.Fatalf("natstest: certificate %s: %v", cn, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("natstest: certificate %s: %v", cn, err)
	}
	return key, cert, der
}

func writePEM(t testing.TB, path, kind string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatalf("natstest: %v", err)
	}
}
