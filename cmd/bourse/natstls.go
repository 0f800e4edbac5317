package main

import (
	"os"

	"github.com/nats-io/nats.go"
	"github.com/spf13/pflag"
)

// natsTLS is how a command meets NATS over TLS: the CA that signed the
// NATS servers' certificates, and this party's own certificate and key
// where the servers ask for one (tls { verify: true }). Paths to PEM
// files; all empty is no TLS unless the URL says tls://.
type natsTLS struct {
	CA   string `yaml:"ca"`
	Cert string `yaml:"cert"`
	Key  string `yaml:"key"`
}

func (t *natsTLS) addFlags(f *pflag.FlagSet) {
	f.StringVar(&t.CA, "nats-ca", "", "PEM file of the CA that signed the NATS servers' certificates (TLS)")
	f.StringVar(&t.Cert, "nats-cert", "", "PEM file of this party's client certificate, where NATS verifies clients")
	f.StringVar(&t.Key, "nats-key", "", "PEM file of the client certificate's private key")
	bindEnv(f, "nats-ca", "BOURSE_NATS_CA")
	bindEnv(f, "nats-cert", "BOURSE_NATS_CERT")
	bindEnv(f, "nats-key", "BOURSE_NATS_KEY")
}

// options are the nats.go options for t, checked first so that a missing
// file is named now rather than as a failed handshake later.
func (t natsTLS) options() ([]nats.Option, error) {
	if (t.Cert == "") != (t.Key == "") {
		return nil, usagef("--nats-cert and --nats-key go together: a client certificate needs its key")
	}
	var opts []nats.Option
	for _, f := range []struct{ flag, path string }{{"nats-ca", t.CA}, {"nats-cert", t.Cert}, {"nats-key", t.Key}} {
		if f.path == "" {
			continue
		}
		if _, err := os.Stat(f.path); err != nil {
			return nil, usagef("--%s: %w", f.flag, err)
		}
	}
	if t.CA != "" {
		opts = append(opts, nats.RootCAs(t.CA))
	}
	if t.Cert != "" {
		opts = append(opts, nats.ClientCert(t.Cert, t.Key))
	}
	return opts, nil
}
