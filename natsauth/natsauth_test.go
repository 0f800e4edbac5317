package natsauth_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/bidder"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/mem"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/memstore"
	"github.com/bourse/bourse/exchange/natsvc"
	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/natsauth"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/server/agent"
	"github.com/bourse/bourse/signing"
)

var cred = currency.Currency{Code: "CRED", Scale: 2}

// operatorMarket makes a market's keys, runs nats-server on the
// configuration Init wrote, and the exchange on its credentials.
func operatorMarket(t *testing.T) (dir string, ns *natsserver.Server, ledger currency.Ledger) {
	t.Helper()
	dir = t.TempDir()
	files, err := natsauth.Init(dir, natsauth.Options{})
	require.NoError(t, err)
	assert.Contains(t, files, filepath.Join(dir, "exchange.creds"))
	for _, p := range []struct{ role, id string }{{natsauth.RoleClient, "alice"}, {natsauth.RoleClient, "bob"}, {natsauth.RoleServer, "gpu1"}, {natsauth.RoleServer, "gpu2"}} {
		_, err := natsauth.User(dir, p.role, p.id, natsauth.UserOptions{})
		require.NoError(t, err)
	}
	opts, err := natsserver.ProcessConfigFile(filepath.Join(dir, "nats-server.conf"))
	require.NoError(t, err)
	opts.Port = natsserver.RANDOM_PORT
	ns = natstest.StartWith(t, opts)

	store := memstore.New(mem.New(mem.Options{}))
	ledger = store.Ledger()
	ctx := context.Background()
	require.NoError(t, ledger.CreateCurrency(ctx, cred))
	for _, c := range []string{"alice", "bob"} {
		w, err := ledger.OpenAccount(ctx, currency.Account{ID: currency.WalletID(cred.Code, c), Currency: cred.Code, Kind: currency.Wallet})
		require.NoError(t, err)
		_, err = currency.Do(ctx, ledger, currency.Transfer{Key: "grant/" + c, From: currency.IssuanceID(cred.Code), To: w.ID, Amount: decimal.NewFromInt(100)})
		require.NoError(t, err)
	}
	nc := natstest.Connect(t, ns, "", nats.UserCredentials(filepath.Join(dir, "exchange.creds")))
	keys, err := signing.LoadKeys(filepath.Join(dir, natsauth.ServerKeys))
	require.NoError(t, err)
	require.Len(t, keys, 2, "gpu1 and gpu2")
	ex, err := natsvc.Start(ctx, natsvc.Config{Conn: nc, Config: exchange.Config{Store: store, Verifier: keys,
		ReadingEvery: 100 * time.Millisecond, Heartbeat: 100 * time.Millisecond}})
	require.NoError(t, err)
	t.Cleanup(ex.Stop)
	return dir, ns, ledger
}

// TestOperatorMarket: a market in operator mode trades end to end, each
// party on its own credentials: a GPU server agent that signs its
// readings with its credentials' key, an exchange that requires it, and a
// client that offers and gets its contract settled, the usage stream
// under the account's JetStream limits.
func TestOperatorMarket(t *testing.T) {
	dir, ns, ledger := operatorMarket(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	signer, err := signing.LoadSigner(filepath.Join(dir, "gpu1.creds"))
	require.NoError(t, err)
	a, err := agent.New(agent.Config{URL: ns.ClientURL(), NATSOptions: []nats.Option{nats.UserCredentials(filepath.Join(dir, "gpu1.creds"))}, Signer: signer,
		ID: "gpu1", Currency: cred, GPUs: []contract.GPU{{Index: 0, Model: "H100", MemoryMiB: 81920}},
		Policy: server.Posted{P: contract.Flat(decimal.RequireFromString("0.01"))}, ReadingEvery: 100 * time.Millisecond, Heartbeat: 100 * time.Millisecond})
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Go(func() { _ = a.Run(ctx) })
	defer wg.Wait()
	defer cancel()

	alice, err := bidder.Dial(bidder.Config{ID: "alice", URL: ns.ClientURL(), Credentials: bidder.Credentials{File: filepath.Join(dir, "alice.creds")}, Timeout: 3 * time.Second})
	require.NoError(t, err)
	defer alice.Close()
	terms := contract.Terms{Client: "alice", Currency: "CRED", GPUs: 1, TimeLimit: 10 * time.Second, Prepayment: decimal.NewFromInt(10),
		P: contract.Flat(decimal.NewFromInt(1)), Job: &contract.JobSpec{Profile: &contract.Profile{Utilization: decimal.NewFromInt(1), Duration: 300 * time.Millisecond}}}
	var c *protocol.ContractView
	deadline := time.Now().Add(5 * time.Second)
	for attempt := 1; c == nil; attempt++ {
		// A new request id each time: an answered one keeps its answer.
		r, err := alice.Offer(ctx, fmt.Sprint("op-", attempt), terms)
		if err == nil && r.Contract != nil {
			c = r.Contract
			break
		}
		require.True(t, time.Now().Before(deadline), "no contract: %v %+v", err, r)
		time.Sleep(100 * time.Millisecond) // gpu1's hello on its way
	}
	for {
		got, err := alice.Contract(ctx, c.ID)
		require.NoError(t, err)
		if got.State == contract.StateSettled {
			assert.Equal(t, contract.ReasonCompleted, got.Reason)
			assert.True(t, got.Charge.IsPositive(), "charged for what gpu1 measured")
			// The exchange took only readings gpu1 signed with the key of
			// its credentials, and keeps the proof.
			require.NotNil(t, got.Signed)
			keys, err := signing.LoadKeys(filepath.Join(dir, natsauth.ServerKeys))
			require.NoError(t, err)
			assert.NoError(t, keys.Verify("gpu1", got.Signed.Body, got.Signed.Sig))
			require.NotNil(t, got.AcceptSigned, "and its signed accept of the terms")
			assert.NoError(t, keys.Verify("gpu1", got.AcceptSigned.Body, got.AcceptSigned.Sig))
			break
		}
		require.True(t, time.Now().Before(deadline.Add(5*time.Second)), "not settled: %+v", got)
		time.Sleep(50 * time.Millisecond)
	}
	rep, err := ledger.Audit(ctx)
	require.NoError(t, err)
	assert.True(t, rep.OK(), "%s", rep)
}

// TestOperatorPermissions: on their own credentials alice cannot publish
// as bob or as a server, nor read bob's deliveries or inbox, and gpu1
// cannot publish as gpu2; each can use its own subjects.
func TestOperatorPermissions(t *testing.T) {
	dir, ns, _ := operatorMarket(t)
	var mu sync.Mutex
	var violations []string
	connect := func(id string) *nats.Conn {
		return natstest.Connect(t, ns, protocol.InboxPrefix(id), nats.UserCredentials(filepath.Join(dir, id+".creds")),
			nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
				mu.Lock()
				defer mu.Unlock()
				violations = append(violations, id+": "+err.Error())
			}))
	}
	alice, gpu1 := connect("alice"), connect("gpu1")

	msg, err := alice.Request(protocol.ClientSubject("alice", protocol.VerbBalance), []byte(`{"currency":"CRED"}`), 2*time.Second)
	require.NoError(t, err, "alice's own request")
	assert.Contains(t, string(msg.Data), "available")

	require.NoError(t, alice.Publish(protocol.ClientSubject("bob", protocol.VerbOffer), []byte(`{}`)))
	require.NoError(t, alice.Publish(protocol.ServerSubject("gpu1", protocol.VerbHello), []byte(`{}`)))
	_, err = alice.Subscribe(protocol.DeliverSubject("bob", ">"), func(*nats.Msg) {})
	require.NoError(t, err)
	_, err = alice.Subscribe(protocol.InboxPrefix("bob")+".>", func(*nats.Msg) {})
	require.NoError(t, err)
	require.NoError(t, gpu1.Publish(protocol.ServerSubject("gpu2", protocol.VerbHeartbeat), []byte(`{}`)))
	require.NoError(t, alice.Publish(protocol.MarketSubject("CRED"), []byte(`{}`)))
	// Both may read the market data, which is public.
	for _, nc := range []*nats.Conn{alice, gpu1} {
		_, err := nc.SubscribeSync(protocol.MarketSubjects)
		require.NoError(t, err)
	}
	require.NoError(t, alice.Flush())
	require.NoError(t, gpu1.Flush())

	want := []string{
		`alice: nats: permissions violation: permissions violation for publish to "bourse.v1.client.bob.offer"`,
		`alice: nats: permissions violation: permissions violation for publish to "bourse.v1.server.gpu1.hello"`,
		`alice: nats: permissions violation: permissions violation for subscription to "bourse.v1.deliver.bob.>"`,
		`alice: nats: permissions violation: permissions violation for subscription to "_inbox_bob.>"`,
		`gpu1: nats: permissions violation: permissions violation for publish to "bourse.v1.server.gpu2.heartbeat"`,
		`alice: nats: permissions violation: permissions violation for publish to "bourse.v1.market.cred"`,
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		mu.Lock()
		got := strings.ToLower(strings.Join(violations, "\n"))
		mu.Unlock()
		missing := 0
		for _, w := range want {
			if !strings.Contains(got, strings.ToLower(w)) {
				missing++
			}
		}
		if missing == 0 {
			// Refused in order: the market data's subscriptions, made
			// before the last of these, would have been refused by now.
			assert.NotContains(t, got, `subscription to "bourse.v1.market`)
			break
		}
		require.True(t, time.Now().Before(deadline), "violations seen:\n%s", got)
		time.Sleep(20 * time.Millisecond)
	}
}

func TestUserErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := natsauth.User(dir, natsauth.RoleClient, "alice", natsauth.UserOptions{})
	assert.ErrorContains(t, err, "run bourse admin nats-auth init first")
	_, err = natsauth.Init(dir, natsauth.Options{})
	require.NoError(t, err)
	_, err = natsauth.Init(dir, natsauth.Options{})
	assert.ErrorContains(t, err, "holds a market's keys already")
	_, err = natsauth.User(dir, "admin", "root", natsauth.UserOptions{})
	assert.ErrorContains(t, err, "want exchange, client, server or viewer")
	_, err = natsauth.User(dir, natsauth.RoleClient, "Bad.Id", natsauth.UserOptions{})
	assert.Error(t, err)
	_, err = natsauth.User(dir, natsauth.RoleClient, "alice", natsauth.UserOptions{})
	require.NoError(t, err)
	_, err = natsauth.User(dir, natsauth.RoleClient, "alice", natsauth.UserOptions{})
	assert.ErrorContains(t, err, "issued already")
	info, err := os.Stat(filepath.Join(dir, "alice.creds"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "a credentials file holds a secret")
	info, err = os.Stat(filepath.Join(dir, "account.nk"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
}

// TestIDsUniqueAcrossRoles: an id is one party's, in one role, for the
// life of the operator: once gpu1 was issued as a server, no client gets
// its name, even after gpu1.creds left the folder (it would read
// gpu1's deliveries), and issuing it again is a rotation, not a second
// key.
func TestIDsUniqueAcrossRoles(t *testing.T) {
	dir := t.TempDir()
	_, err := natsauth.Init(dir, natsauth.Options{})
	require.NoError(t, err)
	_, err = natsauth.User(dir, natsauth.RoleServer, "gpu1", natsauth.UserOptions{})
	require.NoError(t, err)
	require.NoError(t, os.Remove(filepath.Join(dir, "gpu1.creds")), "handed out")

	_, err = natsauth.User(dir, natsauth.RoleClient, "gpu1", natsauth.UserOptions{})
	assert.ErrorContains(t, err, `"gpu1" was issued to the server gpu1`)
	assert.NoFileExists(t, filepath.Join(dir, "gpu1.creds"))
	_, err = natsauth.User(dir, natsauth.RoleServer, "gpu1", natsauth.UserOptions{})
	assert.ErrorContains(t, err, "rotate replaces its key")
	_, err = natsauth.User(dir, natsauth.RoleClient, "exchange", natsauth.UserOptions{})
	assert.ErrorContains(t, err, `"exchange" was issued to the exchange exchange`)
	keys, err := signing.LoadKeys(filepath.Join(dir, natsauth.ServerKeys))
	require.NoError(t, err, "one key for gpu1: the exchange still starts")
	assert.Len(t, keys, 1)

	// A folder made before the registry: it is rebuilt from what the
	// folder holds, server-keys included.
	_, err = natsauth.User(dir, natsauth.RoleServer, "gpu2", natsauth.UserOptions{})
	require.NoError(t, err)
	require.NoError(t, os.Remove(filepath.Join(dir, "gpu2.creds")))
	require.NoError(t, os.Remove(filepath.Join(dir, natsauth.Registry)))
	_, err = natsauth.User(dir, natsauth.RoleClient, "gpu2", natsauth.UserOptions{})
	assert.ErrorContains(t, err, `"gpu2" was issued to the server gpu2`)
	_, err = natsauth.User(dir, natsauth.RoleServer, "exchange", natsauth.UserOptions{})
	assert.ErrorContains(t, err, `"exchange" was issued to the exchange exchange`)
}
