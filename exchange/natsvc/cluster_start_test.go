package natsvc_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/currency/mem"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/memstore"
	"github.com/bourse/bourse/exchange/natsvc"
	"github.com/bourse/bourse/internal/natstest"
)

// TestExchangesStartTogether: three exchanges started at once, each on
// another node of a three-node NATS cluster, all create (or find) the
// replicated usage stream and come up; so do three more started at once
// right after every node has restarted, before the cluster has a leader.
func TestExchangesStartTogether(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	store := memstore.New(mem.New(mem.Options{}))
	startAll := func() {
		t.Helper()
		var wg sync.WaitGroup
		errs := make([]error, len(c.Nodes))
		for i, node := range c.Nodes {
			nc, err := nats.Connect(node.ClientURL(), nats.MaxReconnects(-1))
			require.NoError(t, err)
			t.Cleanup(nc.Close)
			wg.Go(func() {
				svc, err := natsvc.Start(context.Background(), natsvc.Config{Conn: nc, StreamReplicas: 3, JetStreamWait: time.Minute,
					Config: exchange.Config{Store: store, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}})
				errs[i] = err
				if err == nil {
					t.Cleanup(svc.Stop)
				}
			})
		}
		wg.Wait()
		for i, err := range errs {
			assert.NoError(t, err, "the exchange on node %d", i+1)
		}
	}
	startAll()

	for i := range c.Nodes {
		c.Stop(i)
	}
	for i := range c.Nodes {
		c.Start(i)
	}
	startAll()
}

// TestStreamConfiguredOtherwise: a usage stream that exists with another
// storage is a refusal, not something to wait for: Start says so at once.
func TestStreamConfiguredOtherwise(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns, "")
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	_, err = js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "BOURSE_USAGE", Subjects: []string{"bourse.v1.server.*.usage.>"}, Storage: jetstream.MemoryStorage})
	require.NoError(t, err)
	began := time.Now()
	_, err = natsvc.Start(context.Background(), natsvc.Config{Conn: nc, StreamStorage: jetstream.FileStorage,
		Config: exchange.Config{Store: memstore.New(mem.New(mem.Options{})), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "BOURSE_USAGE")
	assert.Less(t, time.Since(began), 10*time.Second, "no retries for a refusal")
}
