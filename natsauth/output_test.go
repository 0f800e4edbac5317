package natsauth_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/bidder"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/server/agent"
	"github.com/bourse/bourse/server/process"
	"github.com/bourse/bourse/server/spool"
	"github.com/bourse/bourse/signing"
)

// TestOperatorOutput: in operator mode too a job's output reaches its
// client alone. gpu1 runs alice's job on its own credentials and sends
// its stdout to the output stream (under the account's JetStream limits);
// alice reads it; bob, on his, gets not_found for her contract and NATS
// refuses him every other way to it.
func TestOperatorOutput(t *testing.T) {
	dir, ns, _ := operatorMarket(t)
	ctx, cancel := context.WithCancel(context.Background())
	out := t.TempDir()
	pr, err := process.New(process.Config{Allowed: []string{"/bin/echo"}, OutputDir: out, Meter: server.FullUse{}, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	defer pr.Close()
	signer, err := signing.LoadSigner(filepath.Join(dir, "gpu1.creds"))
	require.NoError(t, err)
	a, err := agent.New(agent.Config{URL: ns.ClientURL(), NATSOptions: []nats.Option{nats.UserCredentials(filepath.Join(dir, "gpu1.creds"))}, Signer: signer,
		ID: "gpu1", Currency: cred, GPUs: []contract.GPU{{Index: 0, Model: "H100", MemoryMiB: 81920}}, Runner: pr,
		Output: &spool.Config{Dir: out, LogCap: pr.OutputCap()}, Logger: slog.New(slog.DiscardHandler),
		Policy: server.Posted{P: contract.Flat(decimal.RequireFromString("0.01"))}, ReadingEvery: 100 * time.Millisecond, Heartbeat: 100 * time.Millisecond})
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Go(func() { _ = a.Run(ctx) })
	defer wg.Wait()
	defer cancel()

	alice, err := bidder.Dial(bidder.Config{ID: "alice", URL: ns.ClientURL(), Credentials: bidder.Credentials{File: filepath.Join(dir, "alice.creds")}, Timeout: 3 * time.Second})
	require.NoError(t, err)
	defer alice.Close()
	terms := contract.Terms{Client: "alice", Currency: "CRED", GPUs: 1, TimeLimit: time.Minute, Prepayment: decimal.RequireFromString("0.60"),
		P: contract.Flat(decimal.RequireFromString("0.01")), Job: &contract.JobSpec{Command: "/bin/echo", Args: []string{"alice's", "secret"}}}
	var id string
	for deadline, attempt := time.Now().Add(10*time.Second), 1; id == ""; attempt++ {
		// A new request id each time: an answered one keeps its answer.
		r, err := alice.Offer(ctx, fmt.Sprint("op-out-", attempt), terms)
		if err == nil && r.Contract != nil {
			id = r.Contract.ID
		}
		require.True(t, time.Now().Before(deadline), "no contract: %v %+v", err, r)
		if id == "" {
			time.Sleep(100 * time.Millisecond)
		}
	}
	var stdout bytes.Buffer
	fctx, fcancel := context.WithTimeout(ctx, 20*time.Second)
	defer fcancel()
	end, err := alice.FollowLogs(fctx, id, bidder.Follow{Wait: true, Every: 50 * time.Millisecond}, &stdout, &bytes.Buffer{})
	require.NoError(t, err)
	require.NotNil(t, end)
	assert.Equal(t, "alice's secret\n", stdout.String())

	bob, err := bidder.Dial(bidder.Config{ID: "bob", URL: ns.ClientURL(), Credentials: bidder.Credentials{File: filepath.Join(dir, "bob.creds")}, Timeout: time.Second, Retries: -1})
	require.NoError(t, err)
	defer bob.Close()
	_, err = bob.Logs(ctx, id, 0)
	assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err), "bob read alice's logs: %v", err)
	natstest.OutputRefused(t, ns.ClientURL(), "bob", "alice", "gpu1", id, nats.UserCredentials(filepath.Join(dir, "bob.creds")))
}

// TestOperatorFiles: in operator mode too a client puts its files into
// its own bucket on its own credentials, the bucket counted under the
// account's JetStream limits, and another client is refused every way
// into it.
func TestOperatorFiles(t *testing.T) {
	dir, ns, _ := operatorMarket(t)
	alice, err := bidder.Dial(bidder.Config{ID: "alice", URL: ns.ClientURL(), Credentials: bidder.Credentials{File: filepath.Join(dir, "alice.creds")}, Timeout: 3 * time.Second})
	require.NoError(t, err)
	defer alice.Close()
	folder := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(folder, "train.py"), []byte("print('alice')\n"), 0o644))
	f, err := alice.PutFiles(context.Background(), folder, 0)
	require.NoError(t, err, "alice puts into her own bucket")
	again, err := alice.PutFiles(context.Background(), folder, 0)
	require.NoError(t, err, "and finds them there")
	assert.Equal(t, f, again)
	natstest.FilesRefused(t, ns.ClientURL(), "bob", "alice", nats.UserCredentials(filepath.Join(dir, "bob.creds")))
}
