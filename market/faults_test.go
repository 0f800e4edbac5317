package market_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/internal/pgtest"
	"github.com/bourse/bourse/market"
	"github.com/bourse/bourse/scenario"
)

// TestFaults runs a market as docs/operations.md deploys one: a single
// nats-server (a current release, as the docs require: the module's,
// built by the test) with the configuration bourse admin nats-config
// writes (every JetStream write synced) and JetStream on disk, one
// bourse exchange on PostgreSQL, two bourse server agents with
// outboxes, and clients trading through the SDK throughout. Faults come
// one at a time: nats-server restarted under running contracts on the
// same store; the exchange killed (SIGKILL) in the middle of a burst and
// restarted; the exchange paused (SIGSTOP) across jobs' ends and woken;
// PostgreSQL restarted under load; an agent killed (SIGKILL) and
// restarted. After each, a probe's offer to each server is accepted again
// (the agents are registered, the market is open), every contract made
// before the fault's end settles or voids, and the audit is clean. At the
// end every escrow is resolved, every charge is the price of its server's
// own final reading (the last the server sent, read from the usage stream
// and its questions for receipts by a consumer of the test's own), and
// every request id has the outcome its client was told. No process may
// exit unless the test ends it, and none may panic, even one the test
// killed afterwards. What each fault cost is logged as "fault: …" lines,
// which docs/operations.md quotes.
//
// The NATS host's power loss keeps nats-server's store on a lazy file
// system (internal/lazyfs: root and /dev/fuse), which loses what was not
// synced: with the generated configuration (every write synced) the
// usage stream must keep every reading it acknowledged. The sync-default
// run repeats it with nats-server's own default (a sync every two
// minutes), where acknowledged readings are lost, and yet every contract
// is paid its server's final reading (receipts). The power loss is left
// out where the lazy file system cannot run, saying so, except in CI.
//
// The compatibility run does the NATS restart and the agent's kill on
// Debian's nats-server 2.9 (the one the README's make test installs),
// whose configuration takes no sync_interval: 2.9 drops readings it
// acknowledged as it shuts down, which receipts must make up for.
func TestFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("runs nats-server, PostgreSQL and bourse processes")
	}
	t.Run("current", func(t *testing.T) { faults(t, natstest.NATSServer(t), nil, nil) })
	t.Run("sync-default", func(t *testing.T) {
		faults(t, natstest.NATSServer(t), []string{"--sync-interval", "default"}, []string{phasePowerLoss})
	})
	t.Run("debian-2.9", func(t *testing.T) {
		faults(t, natstest.Installed(t), []string{"--sync-interval", "default"}, []string{phaseNATS, phaseAgent})
	})
}

// TestFaults' phases, by name; faults runs those only is given, all if
// it is empty.
const (
	phaseNATS     = "nats-server restarted (SIGTERM, 2 s down, same store)"
	phaseKill     = "bourse exchange killed (SIGKILL) mid-burst and restarted"
	phasePause    = "bourse exchange paused (SIGSTOP) across jobs' ends"
	phasePostgres = "PostgreSQL restarted (fast shutdown, 2 s down)"
	phaseAgent    = "bourse server atlas killed (SIGKILL) and restarted"
)

// faults is TestFaults on nats-server natsBin, its configuration made
// with config's flags added, running the phases of only (all if none).
func faults(t *testing.T, natsBin string, config, only []string) {
	ctx := context.Background()
	pg := pgtest.StartCluster(t)
	bin := buildBourse(t)
	store := openSQL(t, pg.URL()) // the schema, before the exchange starts

	clients := faultClients()
	const probeID = "probe"
	runs := func(name string) bool { return len(only) == 0 || slices.Contains(only, name) }
	jsDir := filepath.Join(t.TempDir(), "jetstream")
	var lazy *lazyStore
	if runs(phasePowerLoss) {
		if lazy = mountLazyStore(t, len(only) > 0); lazy != nil {
			jsDir = lazy.mnt
		}
	}
	nodes := natstest.StartNodeOn(t, natsBin, jsDir, func(port int) string {
		args := append([]string{"admin", "nats-config", "--example-passwords", "--port", strconv.Itoa(port), "--client", probeID}, config...)
		for _, c := range clients {
			args = append(args, "--client", c.ID)
		}
		for _, s := range faultServers {
			args = append(args, "--server", s.id)
		}
		out, err := exec.Command(bin, args...).Output()
		require.NoError(t, err, "bourse admin nats-config")
		return string(out)
	})
	natsURL := nodes.Nodes[0].URL()
	login := func(party string) []string {
		return []string{"--nats", natsURL, "--nats-user", party, "--nats-password", party + "-secret"}
	}

	ex := startExchange(t, bin, "bourse exchange", append(login("exchange"), "--db", pg.URL(),
		"--server-lost-after", serverLostAfter.String(), "--start-timeout", "5s")...)
	ex.waitReady()
	readings := recordReadings(t, natsURL, nats.UserInfo("exchange", "exchange-secret"))
	// The currency first, as a new deployment makes it: a server's hello
	// in a currency the exchange does not know is refused, and it exits.
	require.NoError(t, store.Ledger().CreateCurrency(ctx, market.Currency))
	agents := map[string]*proc{}
	dir := t.TempDir()
	for _, s := range faultServers {
		args := append([]string{"server", "--id", s.id, "--currency", string(market.Currency.Code),
			"--scale", strconv.Itoa(int(market.Currency.Scale)), "--nvml", "off", "--gpus", s.gpus,
			"--outbox-dir", filepath.Join(dir, s.id)}, login(s.id)...)
		agents[s.id] = startProc(t, "bourse server "+s.id, bin, append(args, s.price...)...)
	}
	procs := []*proc{ex.proc, agents["atlas"], agents["cirrus"]}

	m, err := market.Start(ctx, market.Config{Store: store, Servers: []scenario.ServerSpec{}, Clients: clients,
		Wallets: []market.Wallet{{ID: probeID, Budget: dectest.D("1000")}}, JobScale: 0.5, Logger: quiet(),
		NATSURL: natsURL, External: true, ClientTimeout: 2 * time.Second, ClientRetries: 5,
		PartyOptions: func(party string) []nats.Option { return []nats.Option{nats.UserInfo(party, party+"-secret")} }})
	require.NoError(t, err)
	marketStopped := false
	t.Cleanup(func() {
		if !marketStopped {
			ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			m.Stop(ctx)
		}
	})
	var serverIDs []string
	for _, s := range faultServers {
		serverIDs = append(serverIDs, s.id)
	}
	probe := startProbe(t, natsURL, probeID, m.Told, serverIDs)
	for _, s := range serverIDs {
		probe.waitAccepted(s, time.Now().Add(-time.Minute), time.Minute)
	}
	time.Sleep(2 * time.Second) // trading under way

	// phase does fault, which returns when the fault has ended, then
	// waits until each server takes a probe's offer again and every
	// contract made before the fault's end has ended, checks the audit,
	// and logs what the fault cost.
	phase := func(name string, fault func()) {
		t.Helper()
		if !runs(name) {
			return
		}
		before := m.Tally.Snapshot()
		began := time.Now()
		fault()
		ended := time.Now()
		for _, s := range serverIDs {
			probe.waitAccepted(s, ended, 30*time.Second)
		}
		closed := waitEnded(t, store, parties(m), ended, time.Minute)
		rep, err := store.Ledger().Audit(ctx)
		require.NoError(t, err)
		assert.True(t, rep.OK(), "%s: the audit: %s", name, rep)
		require.True(t, nodes.Nodes[0].Running(), "%s: nats-server is not running", name)
		for _, p := range procs {
			require.True(t, p.running(), "%s: %s is not running", name, p.name)
		}
		now := m.Tally.Snapshot()
		t.Logf("fault: %s: %v from its start to its end", name, ended.Sub(began).Round(10*time.Millisecond))
		for _, s := range serverIDs {
			t.Logf("fault: %s: offers to %s: %s", name, s, probe.seen(s, began, ended))
		}
		t.Logf("fault: %s: the bidders' errors %v; contracts made before its end all ended %v after it; settled %d → %d, reasons %v",
			name, errorsSince(before, now), closed.Round(10*time.Millisecond), before.SettledTotal(), now.SettledTotal(), now.Settled)
	}

	// What each agent's log said so far: a phase's line counts what it
	// says after.
	const (
		registeredLine = `msg=registered`
		unansweredLine = `msg="hello not answered`
		askedLine      = `msg="asking the exchange about final readings`
	)
	registered, unanswered, asked := map[string]int{}, map[string]int{}, map[string]int{}
	for _, s := range serverIDs {
		registered[s], unanswered[s], asked[s] = agents[s].countLines(registeredLine), agents[s].countLines(unansweredLine), agents[s].countLines(askedLine)
	}
	// The exchange keeps its servers through its own outage, so offers
	// are accepted before an agent's hello goes through: the hello may
	// come after the phase's checks (its retries back off to 5 s), and
	// the test waits for it rather than racing it.
	helloAgain := func(name string) {
		t.Helper()
		for _, s := range serverIDs {
			if !runs(name) {
				break
			}
			waitFor(t, 30*time.Second, s+"'s hello again after NATS came back", func() bool {
				return agents[s].countLines(registeredLine) > registered[s]
			})
			t.Logf("fault: %s: %s registered again after %d unanswered hellos, and asked %d times about final readings it had no receipt for",
				name, s, agents[s].countLines(unansweredLine)-unanswered[s], agents[s].countLines(askedLine)-asked[s])
			registered[s], unanswered[s], asked[s] = agents[s].countLines(registeredLine), agents[s].countLines(unansweredLine), agents[s].countLines(askedLine)
		}
	}
	phase(phaseNATS, func() {
		nodes.Stop(0)
		time.Sleep(2 * time.Second)
		nodes.Start(0)
	})
	helloAgain(phaseNATS)

	if lazy != nil {
		// Durable where the configuration is the generated one, which
		// syncs every write; --sync-interval leaves nats-server's own
		// default, a sync every two minutes.
		durable := !slices.Contains(config, "--sync-interval")
		phase(phasePowerLoss, func() {
			lazy.powerLoss(nodes, ex, natsURL, nats.UserInfo("exchange", "exchange-secret"),
				func() string { return probe.long(store, "atlas", 5*time.Second) },
				func(id string) bool { rd, ok := readings.lastOf(id); return ok && rd.Final }, durable)
		})
		helloAgain(phasePowerLoss)
	}

	phase(phaseKill, func() {
		crash(ex.proc)
	})

	phase(phasePause, func() {
		waitFor(t, 10*time.Second, "a contract running", func() bool { return m.Tally.Snapshot().Running > 0 })
		finals := readings.finals()
		ex.pause()
		time.Sleep(2 * serverLostAfter)
		ex.resume()
		ended := readings.finals() - finals
		t.Logf("fault: %d jobs ended while the exchange was paused", ended)
		assert.Positive(t, ended, "no job ended while the exchange was paused")
	})

	phase(phasePostgres, func() {
		pg.Stop()
		time.Sleep(2 * time.Second)
		pg.Start()
	})

	var atlasBack time.Time
	phase(phaseAgent, func() {
		agents["atlas"].kill()
		time.Sleep(time.Second)
		agents["atlas"].start()
		atlasBack = time.Now()
	})

	probe.stop()
	stopCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	m.Stop(stopCtx)
	marketStopped = true
	for _, s := range serverIDs {
		assert.NoError(t, agents[s].stop(30*time.Second), "bourse server %s: a clean exit on SIGTERM", s)
	}
	waitNoOpenHolds(t, store, 30*time.Second)
	readings.waitCaughtUp(30 * time.Second)
	for _, s := range serverIDs {
		// Debian's nats-server 2.9 drops some readings it acknowledged
		// as it shut down; the agents hold their final readings until
		// the exchange's receipt, and send one the exchange lacks with
		// their question for it.
		for _, id := range finalsSent(agents[s]) {
			rd, ok := readings.lastOf(id)
			assert.True(t, ok && rd.Final, "%s: JetStream acknowledged %s's final reading, and neither the usage stream nor a question for its receipt carried it", id, s)
		}
	}
	assert.NoError(t, ex.stop(30*time.Second), "bourse exchange: a clean exit on SIGTERM")
	for _, p := range procs {
		p.checkNoPanic()
	}

	reasons := checkCharges(t, store, parties(m), readings.lastOf)
	lost := 0
	for _, id := range parties(m) {
		cs, err := store.Contracts(ctx, id, 0)
		require.NoError(t, err)
		for _, k := range cs {
			if k.Reason == contract.ReasonServerLost {
				lost++
				assert.True(t, k.Server == "atlas" && k.AcceptedAt.Before(atlasBack),
					"%s settled as server lost: only atlas's contracts from before its restart may", k.ID)
			}
		}
	}
	t.Logf("%d contracts settled as server lost (atlas's, running when it was killed); settled %v", lost, reasons)
	checkTold(t, m, store)
}

// serverLostAfter is TestFaults' exchange's setting: short, so that the
// contracts of a killed agent settle soon.
const serverLostAfter = 3 * time.Second

// faultServers are TestFaults' bourse server agents: DefaultServers'
// atlas and cirrus, with twice their GPUs so that the probe's offers find
// room beside the bidders'.
var faultServers = []struct {
	id, gpus string
	price    []string
}{
	{"atlas", "16xH100:81920", []string{"--price", "0.30"}},
	{"cirrus", "16xA100:40960", []string{"--p", "0.5:0,4:0.16"}},
}

// faultClients are the default bidders who want GPUs the fault test's
// servers have (all but the L4 buyer).
func faultClients() []scenario.ClientSpec {
	return slices.DeleteFunc(scenario.DefaultClients(), func(c scenario.ClientSpec) bool { return c.Model == "L4" })
}

// waitEnded waits until every contract of the parties accepted before
// before has settled or voided, and returns how long after before that
// was.
func waitEnded(t *testing.T, store exchange.Store, parties []string, before time.Time, within time.Duration) time.Duration {
	t.Helper()
	ctx := context.Background()
	open := ""
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		open = ""
		for _, id := range parties {
			cs, err := store.Contracts(ctx, id, 0)
			if err != nil {
				open = err.Error() // the database may be coming back
				break
			}
			for _, k := range cs {
				if k.AcceptedAt.Before(before) && k.HoldsEscrow() {
					open = fmt.Sprintf("%s (%s on %s, accepted %s)", k.ID, k.State, k.Server, k.AcceptedAt.Format(time.TimeOnly+".000"))
				}
			}
		}
		if open == "" {
			return time.Since(before)
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("contracts made before %s still open after %v: %s", before.Format(time.TimeOnly+".000"), within, open)
	return 0
}

// waitFor waits until ok, or fails the test saying what it waited for.
func waitFor(t *testing.T, within time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v", what, within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// errorsSince are the bidders' errors between two snapshots, by code.
func errorsSince(before, now market.Snapshot) map[string]int {
	out := map[string]int{}
	for code, n := range now.Errors {
		if d := n - before.Errors[code]; d > 0 {
			out[string(code)] = d
		}
	}
	return out
}

// finalSent is an agent's log line for a final reading JetStream
// acknowledged: sent at the job's end, from the outbox, or again after a
// reconnect.
var finalSent = regexp.MustCompile(`msg="final reading sent[^"]*" .*contract=(c-[0-9a-f]+)`)

// finalsSent lists the contracts whose final readings an agent's log says
// JetStream acknowledged.
func finalsSent(p *proc) []string {
	var ids []string
	for _, m := range finalSent.FindAllStringSubmatch(p.logText(), -1) {
		ids = append(ids, m[1])
	}
	return ids
}
