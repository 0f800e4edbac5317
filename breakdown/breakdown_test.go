package breakdown_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/breakdown"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/mem"
	"github.com/bourse/bourse/exchange/memstore"
	"github.com/bourse/bourse/internal/dectest"
)

var day1 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// market is acme (an organisation) with the project acme.ml, alice in
// the project, bob directly in acme, and carl on his own; and contracts
// on two servers over two days, one still running and one from before.
func market(t *testing.T) (*memstore.Store, currency.Ledger) {
	ctx := context.Background()
	now := day1.AddDate(0, 0, -10)
	l := mem.New(mem.Options{Now: func() time.Time { return now }})
	s := memstore.New(l)
	require.NoError(t, l.CreateCurrency(ctx, currency.Currency{Code: "CRED", Scale: 2}))
	// The servers said hello long before: their revenue accounts.
	for _, server := range []string{"gpu1", "gpu2"} {
		_, err := l.OpenAccount(ctx, currency.Account{ID: currency.RevenueID("CRED", server), Currency: "CRED", Kind: currency.Revenue})
		require.NoError(t, err)
	}
	for _, a := range []struct{ owner, parent string }{{"acme", ""}, {"acme.ml", "acme"}, {"alice", "acme.ml"}, {"bob", "acme"}, {"carl", ""}} {
		acc := currency.Account{ID: currency.WalletID("CRED", a.owner), Currency: "CRED", Kind: currency.Wallet}
		if a.parent != "" {
			acc.Parent = currency.WalletID("CRED", a.parent)
		}
		_, err := l.OpenAccount(ctx, acc)
		require.NoError(t, err)
	}
	for _, c := range []struct {
		id, client, server, model string
		at                        time.Time
		state                     contract.State
		u, charge                 string
	}{
		{"c1", "alice", "gpu1", "H100", day1.Add(time.Hour), contract.StateSettled, "100", "10"},
		{"c2", "alice", "gpu1", "H100", day1.Add(2 * time.Hour), contract.StateSettled, "50", "5"},
		{"c3", "alice", "gpu2", "A100", day1.Add(3 * time.Hour), contract.StateSettled, "20", "1"},
		{"c4", "bob", "gpu2", "", day1.Add(4 * time.Hour), contract.StateSettled, "10", "2"},
		{"c5", "bob", "gpu2", "", day1.Add(5 * time.Hour), contract.StateVoided, "0", "0"},
		{"c6", "carl", "gpu1", "H100", day1.Add(25 * time.Hour), contract.StateSettled, "40", "4"},
		{"c7", "carl", "gpu1", "H100", day1.Add(26 * time.Hour), contract.StateRunning, "5", "0"},
		{"c0", "carl", "gpu1", "H100", day1.Add(-time.Hour), contract.StateSettled, "99", "99"},
	} {
		k := contract.Contract{ID: c.id, Client: c.client, Server: c.server, State: contract.StateAccepted, AcceptedAt: c.at,
			Terms: contract.Terms{Client: c.client, Currency: "CRED", GPUs: 1, Class: contract.Class{Model: c.model}}}
		_, _, err := s.Open(ctx, k, "")
		require.NoError(t, err)
		_, err = s.Update(ctx, c.id, func(k *contract.Contract) ([]currency.Op, error) {
			k.State, k.Charge = c.state, dectest.D(c.charge)
			k.Reading = &contract.Reading{Contract: c.id, U: dectest.D(c.u)}
			return nil, nil
		})
		require.NoError(t, err)
	}
	return s, l
}

func TestBuild(t *testing.T) {
	s, l := market(t)
	r, err := breakdown.Build(context.Background(), s, l, breakdown.Options{From: day1, To: day1.AddDate(0, 0, 2), Capacity: map[string]int{"gpu1": 2}})
	require.NoError(t, err)
	type line struct {
		period, org, project, client, model string
		n                                   int
		u, cost                             string
	}
	var got []line
	for _, x := range r.Lines {
		got = append(got, line{x.Period, x.Org, x.Project, x.Client, x.Model, x.Contracts, x.GPUSeconds.String(), x.Cost.String()})
	}
	assert.Equal(t, []line{
		{"2026-11-01", "acme", "", "bob", "any", 2, "10", "2"},
		{"2026-11-01", "acme", "acme.ml", "alice", "A100", 1, "20", "1"},
		{"2026-11-01", "acme", "acme.ml", "alice", "H100", 2, "150", "15"},
		{"2026-11-02", "", "", "carl", "H100", 1, "40", "4"},
	}, got, "the running contract and the one from before the report are not in it; a voided one counts, for nothing")

	require.Len(t, r.Servers, 3)
	gpu1 := r.Servers[0]
	assert.Equal(t, "gpu1", gpu1.Server)
	assert.Equal(t, "150", gpu1.GPUSeconds.String())
	assert.Equal(t, "172800", gpu1.Capacity.String(), "2 GPUs for a day")
	assert.Equal(t, "172650", gpu1.Idle.String())
	assert.Equal(t, "gpu2", r.Servers[1].Server)
	assert.True(t, r.Servers[1].Capacity.IsZero(), "gpu2's size was not given")
	assert.Equal(t, "2026-11-02", r.Servers[2].Period)

	require.Len(t, r.Prices, 2)
	assert.Equal(t, "0.1", r.Prices[0].PerGPUSecond.String(), "18 for 180 GPU-seconds")
	assert.Equal(t, "0.1", r.Prices[1].PerGPUSecond.String())

	m, err := breakdown.Build(context.Background(), s, l, breakdown.Options{From: day1, To: day1.AddDate(0, 1, 0), By: breakdown.Month})
	require.NoError(t, err)
	assert.Len(t, m.Lines, 4)
	assert.Equal(t, "2026-11", m.Lines[0].Period)
	assert.Equal(t, "0.1", m.Prices[0].PerGPUSecond.String())

	_, err = breakdown.Build(context.Background(), s, l, breakdown.Options{From: day1, To: day1})
	assert.Error(t, err)
}

// TestCapacityWhileTheServerExisted: a server counts idle only from its
// first hello (its revenue account's opening) and up to now; one that
// never said hello has no idle line.
func TestCapacityWhileTheServerExisted(t *testing.T) {
	ctx := context.Background()
	now := day1.Add(-3 * 24 * time.Hour)
	l := mem.New(mem.Options{Now: func() time.Time { return now }})
	s := memstore.New(l)
	require.NoError(t, l.CreateCurrency(ctx, currency.Currency{Code: "CRED", Scale: 2}))
	now = day1.Add(18 * time.Hour) // gpu1's first hello: 6 hours of day 1 left
	_, err := l.OpenAccount(ctx, currency.Account{ID: currency.RevenueID("CRED", "gpu1"), Currency: "CRED", Kind: currency.Revenue})
	require.NoError(t, err)

	r, err := breakdown.Build(ctx, s, l, breakdown.Options{From: day1.AddDate(0, 0, -5), To: day1.AddDate(0, 0, 3),
		Capacity: map[string]int{"gpu1": 2, "ghost": 4}, Now: day1.Add(24*time.Hour + 3*time.Hour)})
	require.NoError(t, err)
	type line struct{ period, server, capacity, idle string }
	var got []line
	for _, x := range r.Servers {
		got = append(got, line{x.Period, x.Server, x.Capacity.String(), x.Idle.String()})
	}
	assert.Equal(t, []line{
		{"2026-11-01", "gpu1", "43200", "43200"}, // 6 h × 2 GPUs, from its hello
		{"2026-11-02", "gpu1", "21600", "21600"}, // 3 h × 2 GPUs, up to now
	}, got, "no idle days before gpu1 existed, none after now, none for a server never seen")
}

// TestBuildTrend: the market's two days of contracts are one price a
// day in Prices, and a line by the hour in Trend, of the ended
// contracts alone.
func TestBuildTrend(t *testing.T) {
	s, l := market(t)
	r, err := breakdown.Build(context.Background(), s, l, breakdown.Options{From: day1, To: day1.AddDate(0, 0, 2)})
	require.NoError(t, err)
	assert.Len(t, r.Prices, 2)
	assert.Equal(t, "1h", r.Trend.Every)
	var got []string
	for _, p := range r.Trend.Points {
		got = append(got, p.At.Format("02 15:04")+" "+p.PerGPUSecond.String())
	}
	assert.Equal(t, []string{"01 01:00 0.1", "01 02:00 0.1", "01 03:00 0.05", "01 04:00 0.2", "02 01:00 0.1"}, got,
		"c1-c4 and c6; c5 sold nothing, c7 runs, c0 is before the report")
}
