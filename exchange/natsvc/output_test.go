package natsvc_test

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/bidder"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/mem"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/memstore"
	"github.com/bourse/bourse/exchange/natsvc"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/pricing"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/server/agent"
	"github.com/bourse/bourse/server/process"
	"github.com/bourse/bourse/server/spool"
	"github.com/bourse/bourse/trade"
)

// TestOutputToItsClientOnly runs a real job under the passwords of
// docs/nats-server.conf (bourse admin nats-config): its stdout goes from
// the server's disk through the output stream to its client, and to no one
// else. bob asking for alice's logs on his own subject is told there is no
// such contract; NATS refuses him her subjects, the servers' output
// subjects and the JetStream API.
func TestOutputToItsClientOnly(t *testing.T) {
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
	ex, err := natsvc.Start(ctx, natsvc.Config{Conn: natstest.Connect(t, ns, "", nats.UserInfo("exchange", "exchange-secret")),
		Config: exchange.Config{Store: store, ReadingEvery: 100 * time.Millisecond, Heartbeat: 100 * time.Millisecond}})
	require.NoError(t, err)
	t.Cleanup(ex.Stop)

	out := t.TempDir()
	pr, err := process.New(process.Config{Allowed: []string{"/bin/echo"}, OutputDir: out, Meter: server.FullUse{}, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(pr.Close)
	actx, stop := context.WithCancel(ctx)
	a, err := agent.New(agent.Config{URL: ns.ClientURL(), NATSOptions: []nats.Option{nats.UserInfo("gpu1", "gpu1-secret")},
		ID: "gpu1", Currency: currency.Currency{Code: cred, Scale: 2}, GPUs: []trade.GPU{{Index: 0, Model: "H100", MemoryMiB: 81920}},
		Runner: pr, Output: &spool.Config{Dir: out, LogCap: pr.OutputCap()}, Logger: slog.New(slog.DiscardHandler),
		ReadingEvery: 100 * time.Millisecond, Heartbeat: 100 * time.Millisecond})
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Go(func() { _ = a.Run(actx) })
	t.Cleanup(func() { stop(); wg.Wait() })

	alice, err := bidder.Dial(bidder.Config{ID: "alice", URL: ns.ClientURL(), Credentials: bidder.Credentials{User: "alice", Password: "alice-secret"}, Timeout: 3 * time.Second})
	require.NoError(t, err)
	t.Cleanup(alice.Close)
	tm := pricing.Terms{Client: "alice", Currency: cred, GPUs: 1, TimeLimit: time.Minute, Prepayment: dectest.D("0.60"),
		P: pricing.Flat(dectest.D("0.01")), Job: &pricing.JobSpec{Command: "/bin/echo", Args: []string{"alice's", "secret"}}}
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
	natstest.OutputRefused(t, ns.ClientURL(), "bob", "alice", id, nats.UserInfo("bob", "bob-secret"))
}

// offerUntilAccepted offers until the server, which may not have said
// hello yet, accepts, and returns the contract's id.
func offerUntilAccepted(t *testing.T, c *bidder.Client, tm pricing.Terms) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; ; i++ {
		r, err := c.Offer(context.Background(), "out-"+time.Now().Format("150405.000000"), tm)
		if err == nil && r.Contract != nil {
			return r.Contract.ID
		}
		require.True(t, time.Now().Before(deadline), "no contract: %v %+v", err, r)
		time.Sleep(100 * time.Millisecond)
	}
}
