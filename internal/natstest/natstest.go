// Package natstest runs a real NATS server with JetStream inside a test
// process, on a free loopback port.
package natstest

import (
	"path/filepath"
	"runtime"
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

// StartShipped runs a server with the repository's docs/nats-server.conf
// (bourse admin nats-config's users alice, bob, gpu1, gpu2 and exchange,
// each "<id>-secret"), as StartWith does, after change if it is not nil.
func StartShipped(t testing.TB, change func(*server.Options)) *server.Server {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	opts, err := server.ProcessConfigFile(filepath.Join(filepath.Dir(file), "..", "..", "docs", "nats-server.conf"))
	if err != nil {
		t.Fatalf("natstest: docs/nats-server.conf: %v", err)
	}
	opts.Port, opts.StoreDir, opts.NoLog = server.RANDOM_PORT, t.TempDir(), true
	if change != nil {
		change(opts)
	}
	return StartWith(t, opts)
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
