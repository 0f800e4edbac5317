package main

import (
	"github.com/nats-io/nats.go"
	"github.com/spf13/pflag"
)

// natsLogin is how a command proves who it is to NATS: a user and
// password, or a credentials file. The password may come from a file or
// the environment rather than the command line, where ps shows it.
type natsLogin struct {
	User         string `yaml:"user"`
	Password     string `yaml:"password"`
	PasswordFile string `yaml:"password_file"`
	Creds        string `yaml:"creds"`
}

func (l *natsLogin) addFlags(f *pflag.FlagSet) {
	f.StringVar(&l.User, "nats-user", "", "NATS user")
	f.StringVar(&l.Password, "nats-password", "", "NATS password (any user of this machine sees a command line: prefer --nats-password-file or the environment)")
	f.StringVar(&l.PasswordFile, "nats-password-file", "", "read the NATS password from this file (its first line)")
	f.StringVar(&l.Creds, "nats-creds", "", "NATS credentials file")
	bindEnv(f, "nats-user", "BOURSE_NATS_USER")
	bindEnv(f, "nats-password", "BOURSE_NATS_PASSWORD")
	bindEnv(f, "nats-password-file", "BOURSE_NATS_PASSWORD_FILE")
	bindEnv(f, "nats-creds", "BOURSE_NATS_CREDS")
}

// options are the nats.go options that log in as l.
func (l natsLogin) options() ([]nats.Option, error) {
	pw, err := readSecret("nats-password", l.Password, l.PasswordFile)
	if err != nil {
		return nil, err
	}
	var opts []nats.Option
	if l.User != "" || pw != "" {
		opts = append(opts, nats.UserInfo(l.User, pw))
	}
	if l.Creds != "" {
		opts = append(opts, nats.UserCredentials(l.Creds))
	}
	return opts, nil
}
