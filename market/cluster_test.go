package market_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/internal/pgtest"
	"github.com/bourse/bourse/market"
	"github.com/bourse/bourse/scenario"
	"github.com/bourse/bourse/server"
)

// TestCluster runs a market as docs/operations.md's cluster recipe says:
// three nats-server processes in one cluster with JetStream and the usage
// stream replicated three times, three bourse exchange processes on one
// PostgreSQL, each listing every node, two GPU servers on different nodes
// and eight clients trading. Faults come one at a time, with trading
// before and after each: the usage stream's leader node is killed
// (SIGKILL) and started again, an exchange is killed (SIGKILL) and
// restarted, another is paused (SIGSTOP) with a negotiation in flight for
// longer than a request's claim and woken, and a NATS node is restarted
// as a rolling restart does, waiting for the stream's replicas. Then the
// ledger's audit is clean with every escrow resolved, every contract is
// charged the price of its server's own final reading, and every request
// id has the one outcome its client was told.
func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("runs nats-server and bourse exchange processes")
	}
	nodes := natstest.StartProcs(t, 3)
	// Each exchange lists its own node first, as the recipe's command
	// line says.
	c := startClusterMarket(t, nodes, nodes.URLs, nil)
	m, js, exchanges, gate := c.m, c.js, c.exchanges, c.gate
	time.Sleep(3 * time.Second)

	// phase runs fault, trades on for a while, and checks that contracts
	// kept settling.
	phase := func(name string, fault func(), after time.Duration) {
		t.Helper()
		before := m.Tally.Snapshot()
		began := time.Now()
		fault()
		time.Sleep(after)
		now := m.Tally.Snapshot()
		t.Logf("%s (%v): settled %d → %d, %d running, errors %v", name, time.Since(began).Round(time.Millisecond),
			before.SettledTotal(), now.SettledTotal(), now.Running, now.Errors)
		assert.Greater(t, now.SettledTotal(), before.SettledTotal(), "%s: contracts kept settling", name)
	}

	phase("the usage stream's leader node killed and restarted", func() {
		name := waitStreamHealthy(t, js, 3, 30*time.Second)
		i := nodes.Index(name)
		require.GreaterOrEqual(t, i, 0, "leader %q", name)
		nodes.Kill(i)
		began := time.Now()
		next := waitStreamLeader(t, js, name, 30*time.Second)
		t.Logf("%s killed; %s leads the usage stream after %v", name, next, time.Since(began).Round(time.Millisecond))
		time.Sleep(3 * time.Second)
		nodes.Start(i)
		began = time.Now()
		waitStreamHealthy(t, js, 3, time.Minute)
		t.Logf("%s back; the usage stream's replicas current after %v", name, time.Since(began).Round(time.Millisecond))
	}, 3*time.Second)

	phase("an exchange killed and restarted", func() {
		crash(exchanges[0].proc)
	}, 4*time.Second)

	phase("an exchange paused across a negotiation", func() {
		ex := exchanges[1]
		// The servers hold their decisions, so negotiations wait on
		// them; the exchange is stopped once it has one in flight, past
		// its claim's deadline (negotiation 2 s + 5 s), so that the
		// client's retries on other instances take the request over.
		gate.close()
		inFlight := waitInFlight(t, ex, 5*time.Second)
		ex.pause()
		gate.open()
		t.Logf("%s stopped with %d requests in flight", ex.name, inFlight)
		time.Sleep(8 * time.Second)
		ex.resume()
	}, 4*time.Second)

	phase("a NATS node restarted", func() {
		nodes.Stop(0) // the node of the first server and of exchange 1
		time.Sleep(time.Second)
		nodes.Start(0)
		began := time.Now()
		waitStreamHealthy(t, js, 3, time.Minute)
		t.Logf("%s back; the usage stream's replicas current after %v", nodes.Nodes[0].Name, time.Since(began).Round(time.Millisecond))
	}, 4*time.Second)

	c.finish()
}

// clusterMarket is TestCluster's market: three bourse exchange processes
// on one PostgreSQL with the usage stream replicated three times, on a
// cluster of three NATS nodes, two GPU servers (DefaultServers' H100s
// and A100s, whose decisions a gate can hold) on the first two nodes,
// and eight clients trading, spread over the nodes.
type clusterMarket struct {
	t         *testing.T
	nodes     *natstest.Procs
	store     exchange.Store
	js        jetstream.JetStream
	exchanges []*exchangeProc
	gate      *gate
	m         *market.Market
	stopped   bool
}

// startClusterMarket starts the exchanges on nodes, exchange i given the
// URLs exchangeURLs(i), and the market with wallets besides its clients'.
func startClusterMarket(t *testing.T, nodes *natstest.Procs, exchangeURLs func(i int) string, wallets []market.Wallet) *clusterMarket {
	t.Helper()
	ctx := context.Background()
	dbURL := pgtest.FreshDB(t)
	bin := buildBourse(t)
	c := &clusterMarket{t: t, nodes: nodes, store: openSQL(t, dbURL), gate: &gate{}} // the schema, before the processes start
	c.js = jetStreamOn(t, nodes)

	// Started together, before JetStream has a leader: there is no
	// start-up order.
	c.exchanges = make([]*exchangeProc, 3)
	for i := range c.exchanges {
		c.exchanges[i] = startExchange(t, bin, fmt.Sprintf("bourse exchange %d", i+1), "--nats", exchangeURLs(i), "--db", dbURL,
			"--stream-replicas", "3")
	}
	for _, ex := range c.exchanges {
		ex.waitReady()
	}
	leader := waitStreamHealthy(t, c.js, 3, time.Minute)
	t.Logf("three exchanges up; the usage stream's leader is %s", leader)

	servers := scenario.DefaultServers()
	servers = []scenario.ServerSpec{servers[0], servers[2]} // H100s and A100s, on nodes 1 and 2
	for i := range servers {
		servers[i].Policy = gated{servers[i].Policy, c.gate}
	}
	var urls []string
	for _, n := range nodes.Nodes {
		urls = append(urls, n.URL())
	}
	m, err := market.Start(ctx, market.Config{Store: c.store, Servers: servers, JobScale: 0.5, Logger: quiet(),
		Nodes: urls, External: true, ClientTimeout: 2 * time.Second, ClientRetries: 10, Wallets: wallets})
	require.NoError(t, err)
	c.m = m
	t.Cleanup(func() {
		if !c.stopped {
			m.Stop(ctx)
		}
	})
	return c
}

// finish stops trading and the exchanges, and checks what the market
// did: the ledger's audit is clean with every escrow resolved, every
// contract is charged the price of its server's own final reading (none
// settled as server lost: every server stays up), and every request id
// has the one outcome its client was told.
func (c *clusterMarket) finish() {
	t := c.t
	t.Helper()
	stopCtx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c.m.Stop(stopCtx)
	c.stopped = true
	waitNoOpenHolds(t, c.store, 30*time.Second)
	for _, ex := range c.exchanges {
		assert.NoError(t, ex.stop(30*time.Second), "%s: a clean exit on SIGTERM", ex.name)
		ex.checkNoPanic()
	}
	check(t, c.m, c.store)
	checkTold(t, c.m, c.store)
}

// gate holds the servers' decisions while it is closed.
type gate struct{ mu sync.RWMutex }

func (g *gate) close() { g.mu.Lock() }
func (g *gate) open()  { g.mu.Unlock() }

// gated is a policy that decides once its gate is open.
type gated struct {
	server.Policy
	g *gate
}

func (p gated) Decide(offer contract.Terms, st server.View) server.Decision {
	p.g.mu.RLock()
	defer p.g.mu.RUnlock()
	return p.Policy.Decide(offer, st)
}

// contractIDOf is the contract id a client's request id names, as
// docs/protocol.md defines it.
func contractIDOf(client, requestID string) string {
	return "c-" + strings.ToLower(fmt.Sprintf("%x", sha256Of(client+"\x00"+requestID)))[:20]
}
