package bidder_test

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/bidder"
	"github.com/bourse/bourse/bidder/strategy"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/market"
	"github.com/bourse/bourse/market/markettest"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/scenario"
)

// startMarket runs a market with one server (8 H100 at a posted 0.30 per
// GPU-second) and no simulated bidders, and funds ada and bob.
func startMarket(t *testing.T) (*markettest.Market, currency.Ledger) {
	t.Helper()
	m := markettest.Start(t, market.Config{Clients: []scenario.ClientSpec{},
		Servers: []scenario.ServerSpec{markettest.PostedH100s("atlas", 8, decimal.RequireFromString("0.30"))}})
	m.Fund("CRED", decimal.NewFromInt(100), "ada", "bob")
	return m, m.Ledger
}

func dial(t *testing.T, m *markettest.Market, id string) *bidder.Client {
	t.Helper()
	c, err := bidder.Dial(bidder.Config{ID: id, URL: m.URL(), Timeout: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

func job(name string, runtime time.Duration) strategy.Job {
	return strategy.Job{Name: name, Currency: "CRED", Scale: 2, GPUs: 1, Runtime: runtime,
		Utilization: decimal.NewFromInt(1), Value: decimal.RequireFromString("0.40")}
}

func TestClient(t *testing.T) {
	m, ledger := startMarket(t)
	ctx := context.Background()
	ada, bob := dial(t, m, "ada"), dial(t, m, "bob")

	t.Run("DefaultCurrency", func(t *testing.T) {
		b, err := ada.Balance(ctx, "")
		require.NoError(t, err)
		assert.Equal(t, currency.Code("CRED"), b.Currency)
		assert.Equal(t, int32(2), b.Scale, "the currency's scale comes with the balance")
		es, err := ada.Statement(ctx, "", 0, 10)
		require.NoError(t, err)
		require.NotEmpty(t, es)
		assert.True(t, es[0].Amount.Equal(decimal.NewFromInt(100)))
	})

	t.Run("Strategies", func(t *testing.T) {
		for name, s := range map[string]strategy.Strategy{
			"Fixed": strategy.Fixed{}, "Cheapest": strategy.Cheapest{}, "Adaptive": &strategy.Adaptive{}, "Deadline": strategy.Deadline{},
		} {
			t.Run(name, func(t *testing.T) {
				j := job("strategy-"+name, 300*time.Millisecond)
				j.Deadline = time.Now().Add(time.Minute)
				var rounds []strategy.Round
				k, err := strategy.Negotiate(ctx, ada, strategy.Negotiation{Strategy: s, Job: j, Report: func(r strategy.Round) { rounds = append(rounds, r) }})
				require.NoError(t, err)
				assert.Equal(t, "atlas", k.Server)
				require.NotEmpty(t, rounds)
				if name != "Fixed" { // the others open below the reserve and take its counter
					assert.NotNil(t, rounds[len(rounds)-1].Took)
				}
			})
		}
		t.Run("GivesUp", func(t *testing.T) {
			j := job("give-up", 300*time.Millisecond)
			j.Value = decimal.RequireFromString("0.10")
			_, err := strategy.Negotiate(ctx, ada, strategy.Negotiation{Strategy: strategy.Fixed{}, Job: j, Rounds: 2, Pause: time.Millisecond})
			assert.ErrorIs(t, err, strategy.ErrGaveUp)
		})
	})

	t.Run("RetryEscrowsOnce", func(t *testing.T) {
		before, err := ada.Balance(ctx, "")
		require.NoError(t, err)
		terms := strategy.Fixed{}.Bid(job("retry", time.Minute), 0, time.Now())
		first, err := ada.Offer(ctx, "retry-1", terms)
		require.NoError(t, err)
		require.NotNil(t, first.Contract)
		for range 3 {
			again, err := ada.Offer(ctx, "retry-1", terms)
			require.NoError(t, err)
			require.NotNil(t, again.Contract)
			assert.Equal(t, first.Contract.ID, again.Contract.ID)
		}
		after, err := ada.Balance(ctx, "")
		require.NoError(t, err)
		assert.True(t, after.Held.Sub(before.Held).Equal(terms.Prepayment), "held %s → %s", before.Held, after.Held)
		_, err = ada.Kill(ctx, first.Contract.ID)
		require.NoError(t, err)
	})

	t.Run("Watch", func(t *testing.T) {
		r, err := ada.Offer(ctx, "watch-1", strategy.Fixed{}.Bid(job("watch", 1500*time.Millisecond), 0, time.Now()))
		require.NoError(t, err)
		require.NotNil(t, r.Contract, "%+v", r)
		events, err := ada.Watch(ctx, r.Contract.ID)
		require.NoError(t, err)
		var types []protocol.EventType
		var last bidder.Update
		for ev := range events {
			assert.Equal(t, r.Contract.ID, ev.Contract.ID)
			assert.True(t, ev.Contract.Terms.Equal(r.Contract.Terms), "%s event: Watch fills in the terms the exchange leaves out", ev.Type)
			types = append(types, ev.Type)
			last = ev
		}
		assert.Contains(t, types, protocol.EventReading)
		assert.Equal(t, protocol.EventSettled, last.Type)
		assert.Equal(t, contract.ReasonCompleted, last.Contract.Reason)
		// The events, merged, make the contract the exchange keeps: the
		// client's view of its record, to the byte.
		stored, err := ada.Contract(ctx, r.Contract.ID)
		require.NoError(t, err)
		assert.Equal(t, jsonOf(t, stored), jsonOf(t, last.Contract), "Watch's merged view against the record")

		// A watcher that comes after the settlement sees it at once.
		events, err = ada.Watch(ctx, r.Contract.ID)
		require.NoError(t, err)
		var late []bidder.Update
		for ev := range events {
			late = append(late, ev)
		}
		require.Len(t, late, 1)
		assert.Equal(t, protocol.EventSettled, late[0].Type)
	})

	t.Run("OtherClients", func(t *testing.T) {
		r, err := ada.Offer(ctx, "private-1", strategy.Fixed{}.Bid(job("private", time.Minute), 0, time.Now()))
		require.NoError(t, err)
		id := r.Contract.ID
		notFound := func(err error) {
			t.Helper()
			assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err), "%v", err)
		}
		_, err = bob.Contract(ctx, id)
		notFound(err)
		_, err = bob.Watch(ctx, id)
		notFound(err)
		_, err = bob.Suspend(ctx, id)
		notFound(err)
		_, err = bob.Kill(ctx, id)
		notFound(err)
		_, err = bob.Resume(ctx, "steal", id, strategy.Fixed{}.Bid(job("steal", time.Minute), 0, time.Now()))
		notFound(err)
		cs, err := bob.Contracts(ctx, 100)
		require.NoError(t, err)
		for _, k := range cs {
			assert.NotEqual(t, id, k.ID)
		}
		k, err := ada.Contract(ctx, id)
		require.NoError(t, err)
		assert.False(t, k.State == contract.StateSettled || k.State == contract.StateVoided, "bob stopped it: %s", k.State)
		_, err = ada.Kill(ctx, id)
		require.NoError(t, err)
	})

	rep, err := ledger.Audit(ctx)
	require.NoError(t, err)
	assert.True(t, rep.OK(), "%s", rep)
}

func TestDialDefaults(t *testing.T) {
	_, err := bidder.Dial(bidder.Config{})
	assert.Equal(t, bourse.EInvalid, bourse.ErrorCode(err), "an id is required")
	_, err = bidder.Dial(bidder.Config{ID: "ada", URL: "nats://127.0.0.1:1"})
	assert.Equal(t, bourse.EUnavailable, bourse.ErrorCode(err))
}

func TestDialCredentials(t *testing.T) {
	ns := natstest.StartWith(t, &natsserver.Options{Username: "ada", Password: "secret"})
	c, err := bidder.Dial(bidder.Config{ID: "ada", URL: ns.ClientURL(), Credentials: bidder.Credentials{User: "ada", Password: "secret"}})
	require.NoError(t, err)
	c.Close()
	_, err = bidder.Dial(bidder.Config{ID: "ada", URL: ns.ClientURL(), Credentials: bidder.Credentials{User: "ada", Password: "wrong"}})
	assert.Equal(t, bourse.EPermission, bourse.ErrorCode(err), "a wrong password is no outage: %v", err)
	assert.Contains(t, err.Error(), "refused the credentials")
}

// TestActAsAnother connects as NATS user alice of docs/nats-server.conf
// but as client bob: NATS drops the requests, so none can be answered,
// and the client must say so at once rather than wait out its timeout
// and its retries (15 s here) and call it an outage.
func TestActAsAnother(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	opts, err := natsserver.ProcessConfigFile(filepath.Join(filepath.Dir(file), "..", "docs", "nats-server.conf"))
	require.NoError(t, err)
	opts.Port = natsserver.RANDOM_PORT
	ns := natstest.StartWith(t, opts)
	alice := bidder.Credentials{User: "alice", Password: "alice-secret"}

	c, err := bidder.Dial(bidder.Config{ID: "bob", URL: ns.ClientURL(), Credentials: alice, Timeout: 5 * time.Second})
	require.NoError(t, err)
	defer c.Close()
	start := time.Now()
	_, err = c.Balance(context.Background(), "")
	assert.Less(t, time.Since(start), 2*time.Second, "waited for an answer that cannot come")
	assert.Equal(t, bourse.EPermission, bourse.ErrorCode(err), "%v", err)
	assert.Contains(t, err.Error(), "this NATS user may not act as client bob")
	_, err = c.Contracts(context.Background(), 1)
	assert.Equal(t, bourse.EPermission, bourse.ErrorCode(err), "the next request knows already")

	own, err := bidder.Dial(bidder.Config{ID: "alice", URL: ns.ClientURL(), Credentials: alice, Timeout: 200 * time.Millisecond, Retries: -1})
	require.NoError(t, err)
	defer own.Close()
	_, err = own.Balance(context.Background(), "")
	assert.Equal(t, bourse.EUnavailable, bourse.ErrorCode(err), "alice as alice is allowed; no exchange runs: %v", err)
}

// TestDialWrongInbox: a connection whose replies would come to another
// inbox than the client's gets no answers from the exchange, so Dial
// refuses it and says how to connect.
func TestDialWrongInbox(t *testing.T) {
	ns := natstest.Start(t)
	_, err := bidder.Dial(bidder.Config{ID: "ada", Conn: natstest.Connect(t, ns, "")})
	require.Error(t, err)
	assert.Equal(t, bourse.EInvalid, bourse.ErrorCode(err))
	assert.Contains(t, err.Error(), `nats.CustomInboxPrefix("_INBOX_ada")`)
	_, err = bidder.Dial(bidder.Config{ID: "ada", Conn: natstest.Connect(t, ns, protocol.InboxPrefix("bob"))})
	assert.Error(t, err)
	_, err = bidder.Dial(bidder.Config{ID: "ada", Conn: natstest.Connect(t, ns, protocol.InboxPrefix("ada"))})
	assert.NoError(t, err)
}

// jsonOf is v as the wire writes it.
func jsonOf(t testing.TB, v any) string {
	t.Helper()
	b, err := protocol.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
