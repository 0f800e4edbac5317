package natsvc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/bidder"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/mem"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/memstore"
	"github.com/bourse/bourse/exchange/natsvc"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/protocol/natswire"
	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/server/agent"
	"github.com/bourse/bourse/server/process"
	"github.com/bourse/bourse/server/spool"
)

// TestOutputToItsClientOnly runs a real job under the passwords of
// docs/nats-server.conf (bourse admin nats-config): its stdout goes from
// the server's disk through the output stream to its client, and to no one
// else. bob asking for alice's logs on his own subject is told there is no
// such contract; NATS refuses him her subjects, the servers' output
// subjects and the JetStream API.
func TestOutputToItsClientOnly(t *testing.T) {
	ns, _ := shippedMarket(t, exchange.Config{}, 1, "/bin/echo")
	ctx := context.Background()

	alice, err := bidder.Dial(bidder.Config{ID: "alice", URL: ns.ClientURL(), Credentials: bidder.Credentials{User: "alice", Password: "alice-secret"}, Timeout: 3 * time.Second})
	require.NoError(t, err)
	t.Cleanup(alice.Close)
	tm := contract.Terms{Client: "alice", Currency: cred, GPUs: 1, TimeLimit: time.Minute, Prepayment: dectest.D("0.60"),
		P: contract.Flat(dectest.D("0.01")), Job: &contract.JobSpec{Command: "/bin/echo", Args: []string{"alice's", "secret"}}}
	id := offerUntilAccepted(t, alice, tm)

	var stdout, stderr bytes.Buffer
	fctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	end, err := alice.FollowLogs(fctx, id, bidder.Follow{Wait: true, Every: 50 * time.Millisecond}, &stdout, &stderr)
	require.NoError(t, err)
	assert.Equal(t, "alice's secret\n", stdout.String())
	require.NotNil(t, end)
	assert.Equal(t, int64(len("alice's secret\n")), end.Stdout)

	bob, err := bidder.Dial(bidder.Config{ID: "bob", URL: ns.ClientURL(), Credentials: bidder.Credentials{User: "bob", Password: "bob-secret"}, Timeout: time.Second, Retries: -1})
	require.NoError(t, err)
	t.Cleanup(bob.Close)
	t.Run("OwnSubject", func(t *testing.T) {
		for _, read := range []func(context.Context, string, uint64) (protocol.OutputReply, error){bob.Logs, bob.ResultsPage} {
			r, err := read(ctx, id, 0)
			assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err), "bob read alice's output: %+v", r)
		}
	})
	natstest.OutputRefused(t, ns.ClientURL(), "bob", "alice", "gpu1", id, nats.UserInfo("bob", "bob-secret"))
}

// offerUntilAccepted offers until the server, which may not have said
// hello yet, accepts, and returns the contract's id.
func offerUntilAccepted(t *testing.T, c *bidder.Client, tm contract.Terms) string {
	t.Helper()
	return offerUntilAcceptedAs(t, c, tm, func(string) {})
}

// offerUntilAcceptedAs is offerUntilAccepted telling named each request
// id before it is offered.
func offerUntilAcceptedAs(t *testing.T, c *bidder.Client, tm contract.Terms, named func(requestID string)) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; ; i++ {
		requestID := "out-" + time.Now().Format("150405.000000")
		named(requestID)
		r, err := c.Offer(context.Background(), requestID, tm)
		if err == nil && r.Contract != nil {
			return r.Contract.ID
		}
		require.True(t, time.Now().Before(deadline), "no contract: %v %+v", err, r)
		time.Sleep(100 * time.Millisecond)
	}
}

// TestOutputStreamUpgrade: the one output stream an earlier exchange
// made for every server would overlap the servers' own; an exchange that
// starts on it retires it (what it held is kept, for its age), and makes
// each server's own stream at its hello, a process or container server's.
func TestOutputStreamUpgrade(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns, "")
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	ctx := context.Background()
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: protocol.SharedOutputStream, Subjects: []string{protocol.OutputSubjects},
		Duplicates: 10 * time.Minute, MaxAge: 7 * 24 * time.Hour, AllowDirect: true})
	require.NoError(t, err)
	_, err = js.Publish(ctx, protocol.OutputSubject("gpu1", "c-1", protocol.PartLog), []byte("old output"))
	require.NoError(t, err)

	store := memstore.New(mem.New(mem.Options{}))
	require.NoError(t, store.Ledger().CreateCurrency(ctx, currency.Currency{Code: cred, Scale: 2}))
	ex, err := natsvc.Start(ctx, natsvc.Config{Conn: nc, Config: exchange.Config{Store: store}})
	require.NoError(t, err, "an exchange starts on the stream an earlier one made")
	t.Cleanup(ex.Stop)
	old, err := js.Stream(ctx, protocol.SharedOutputStream)
	require.NoError(t, err)
	info := old.CachedInfo()
	assert.NotContains(t, info.Config.Subjects, protocol.OutputSubjects, "the shared stream still takes the servers' output")
	assert.Equal(t, uint64(1), info.State.Msgs, "what it held is kept")

	body, _ := json.Marshal(protocol.Hello{Currency: cred, GPUs: []contract.GPU{{Index: 0, Model: "H100", MemoryMiB: 81920}}, Free: 1, At: time.Now().UTC(),
		Runs: &protocol.Runs{Runner: protocol.RunnerProcess, Programs: []string{"/bin/true"}}})
	msg, err := natstest.Connect(t, ns, protocol.InboxPrefix("gpu1")).Request(protocol.ServerSubject("gpu1", protocol.VerbHello), body, 5*time.Second)
	require.NoError(t, err)
	require.NoError(t, natswire.DecodeError(msg))
	own, err := js.Stream(ctx, protocol.OutputStreamOf("gpu1"))
	require.NoError(t, err, "no stream of gpu1's own after its hello")
	assert.Equal(t, []string{protocol.OutputSubjectsOf("gpu1")}, own.CachedInfo().Config.Subjects)
	assert.Equal(t, int64(256<<20), own.CachedInfo().Config.MaxBytes, "the quota of each server on file storage")
	_, err = js.Publish(ctx, protocol.OutputSubject("gpu1", "c-2", protocol.PartLog), []byte("new output"))
	require.NoError(t, err)
	info, err = own.Info(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), info.State.Msgs)

	// A server that runs containers has output as well.
	body, _ = json.Marshal(protocol.Hello{Currency: cred, GPUs: []contract.GPU{{Index: 0, Model: "H100", MemoryMiB: 81920}}, Free: 1, At: time.Now().UTC(),
		Runs: &protocol.Runs{Runner: protocol.RunnerContainer, Images: &protocol.Images{Allowed: []string{"ghcr.io/acme"}}}})
	msg, err = natstest.Connect(t, ns, protocol.InboxPrefix("gpu2")).Request(protocol.ServerSubject("gpu2", protocol.VerbHello), body, 5*time.Second)
	require.NoError(t, err)
	require.NoError(t, natswire.DecodeError(msg))
	_, err = js.Stream(ctx, protocol.OutputStreamOf("gpu2"))
	assert.NoError(t, err, "no stream of gpu2's own after its hello")
}

// shippedMarket runs NATS with docs/nats-server.conf, the exchange on its
// user (cfg, with readings and heartbeats every 100 ms), alice and bob
// funded, and gpu1 running programs on gpus GPUs, as the process
// runner's jobs, with output; it returns NATS and the exchange's
// connection.
func shippedMarket(t *testing.T, cfg exchange.Config, gpus int, programs ...string) (*natsserver.Server, *nats.Conn) {
	t.Helper()
	ns := natstest.StartShipped(t, nil)
	ctx := context.Background()
	store := memstore.New(mem.New(mem.Options{}))
	require.NoError(t, store.Ledger().CreateCurrency(ctx, currency.Currency{Code: cred, Scale: 2}))
	for _, id := range []string{"alice", "bob"} {
		w, err := store.Ledger().OpenAccount(ctx, currency.Account{ID: currency.WalletID(cred, id), Currency: cred, Kind: currency.Wallet})
		require.NoError(t, err)
		_, err = currency.Do(ctx, store.Ledger(), currency.Transfer{Key: "grant/" + id, From: currency.IssuanceID(cred), To: w.ID, Amount: dectest.D("100")})
		require.NoError(t, err)
	}
	cfg.Store, cfg.ReadingEvery, cfg.Heartbeat = store, 100*time.Millisecond, 100*time.Millisecond
	exch := natstest.Connect(t, ns, "", nats.UserInfo("exchange", "exchange-secret"))
	ex, err := natsvc.Start(ctx, natsvc.Config{Conn: exch, Config: cfg})
	require.NoError(t, err)
	t.Cleanup(ex.Stop)

	out := t.TempDir()
	pr, err := process.New(process.Config{Allowed: programs, OutputDir: out, Meter: server.FullUse{}, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(pr.Close)
	var gs []contract.GPU
	for i := range gpus {
		gs = append(gs, contract.GPU{Index: i, Model: "H100", MemoryMiB: 81920})
	}
	actx, stop := context.WithCancel(ctx)
	a, err := agent.New(agent.Config{URL: ns.ClientURL(), NATSOptions: []nats.Option{nats.UserInfo("gpu1", "gpu1-secret")},
		ID: "gpu1", Currency: currency.Currency{Code: cred, Scale: 2}, GPUs: gs,
		Runner: pr, Output: &spool.Config{Dir: out, LogCap: pr.OutputCap()}, Logger: slog.New(slog.DiscardHandler),
		ReadingEvery: 100 * time.Millisecond, Heartbeat: 100 * time.Millisecond})
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Go(func() { _ = a.Run(actx) })
	t.Cleanup(func() { stop(); wg.Wait() })
	return ns, exch
}
