// Package natstest runs a real NATS server with JetStream inside a test
// process, on a free loopback port.
package natstest

import (
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Start runs a server with JetStream storing under a temporary directory
// and shuts it down when the test ends.
func Start(t testing.TB) *server.Server {
	t.Helper()
	return StartWith(t, &server.Options{})
}

// StartWith runs a server with opts, filling in a loopback host, a free
// port and JetStream in t.TempDir() unless opts sets them.
func StartWith(t testing.TB, opts *server.Options) *server.Server {
	t.Helper()
	if opts.Host == "" {
		opts.Host = "127.0.0.1"
	}
	if opts.Port == 0 {
		opts.Port = server.RANDOM_PORT
	}
	if opts.StoreDir == "" {
		opts.StoreDir = t.TempDir()
	}
	opts.JetStream = true
	opts.NoSigs = true
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatalf("natstest: new server: %v", err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("natstest: server not ready")
	}
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	return s
}

// Connect opens a connection to s as party id (with its inbox prefix) and
// closes it when the test ends.
func Connect(t testing.TB, s *server.Server, inboxPrefix string, opts ...nats.Option) *nats.Conn {
	t.Helper()
	if inboxPrefix != "" {
		opts = append(opts, nats.CustomInboxPrefix(inboxPrefix))
	}
	nc, err := nats.Connect(s.ClientURL(), opts...)
	if err != nil {
		t.Fatalf("natstest: connect: %v", err)
	}
	t.Cleanup(nc.Close)
	return nc
}
