package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/internal/dectest"
)

func TestFairUseDecide(t *testing.T) {
	base := Posted{P: contract.Flat(dectest.D("0.001"))}
	rules := FairUse{Base: base, MinTimeLimit: 10 * time.Minute, MaxTimeLimit: time.Hour, MaxRunning: 2, Cooldown: 24 * time.Hour}
	with := func(f func(*contract.Terms)) contract.Terms { o := offer(); f(&o); return o }
	client := func(u ClientUse) View { st := testView(); st.Client = u; return st }
	for _, tc := range []struct {
		name    string
		policy  FairUse
		offer   contract.Terms
		st      View
		accept  bool
		reason  string
		counter func(*contract.Terms) // how the counter differs from the offer; nil for none
	}{
		{name: "off", policy: FairUse{Base: base}, accept: true, st: client(ClientUse{Running: 9, LastEnd: now}),
			offer: with(func(o *contract.Terms) { o.TimeLimit = time.Second; o.Prepayment = dectest.D("0.01") })},
		{name: "within the rules", policy: rules, offer: offer(), accept: true,
			st: client(ClientUse{Running: 1, LastStart: now.Add(-time.Hour), LastEnd: now.Add(-25 * time.Hour)})},
		{name: "too many running", policy: rules, offer: offer(), st: client(ClientUse{Running: 2}), reason: "2 contracts"},
		{name: "cooling down", policy: rules, offer: offer(), st: client(ClientUse{LastEnd: now.Add(-23 * time.Hour)}),
			reason: "from 2026-03-01T13:00:00Z"},
		{name: "cooled down exactly", policy: rules, offer: offer(), st: client(ClientUse{LastEnd: now.Add(-24 * time.Hour)}), accept: true},
		{name: "too short", policy: rules, st: client(ClientUse{}), reason: "under the minimum 10m0s",
			offer: with(func(o *contract.Terms) { o.TimeLimit = 5 * time.Minute; o.Prepayment = dectest.D("1.20") })},
		{name: "too long", policy: rules, st: client(ClientUse{}), reason: "over the maximum 1h0m0s",
			offer:   with(func(o *contract.Terms) { o.TimeLimit = 2 * time.Hour; o.Prepayment = dectest.D("28.80") }),
			counter: func(c *contract.Terms) { c.TimeLimit = time.Hour; c.Prepayment = dectest.D("14.40") }},
		{name: "too long, prepayment kept", policy: rules, st: client(ClientUse{}),
			offer:   with(func(o *contract.Terms) { o.TimeLimit = 2 * time.Hour; o.Prepayment = dectest.D("5") }),
			counter: func(c *contract.Terms) { c.TimeLimit = time.Hour }},
		{name: "too long and too cheap: the base's counter", policy: rules, st: client(ClientUse{}),
			offer: with(func(o *contract.Terms) {
				o.TimeLimit, o.P, o.Prepayment = 2*time.Hour, contract.Flat(dectest.D("0.0005")), dectest.D("7.20")
			}),
			counter: func(c *contract.Terms) {
				c.TimeLimit, c.P, c.Prepayment = time.Hour, contract.Flat(dectest.D("0.001")), dectest.D("7.20")
			}},
		{name: "base counters under the minimum are dropped", st: client(ClientUse{}),
			policy: FairUse{Base: Posted{P: base.P, MaxTimeLimit: 5 * time.Minute}, MinTimeLimit: 10 * time.Minute},
			offer:  offer(), reason: "over 5m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.policy.Decide(tc.offer, tc.st)
			require.Equal(t, tc.accept, got.Accept, got.Reason)
			if tc.accept {
				return
			}
			assert.Contains(t, got.Reason, tc.reason)
			if tc.counter == nil {
				assert.Empty(t, got.Counters)
				return
			}
			want := tc.offer
			tc.counter(&want)
			require.Len(t, got.Counters, 1)
			assert.True(t, want.Equal(got.Counters[0]), "counter %+v\nwant    %+v", got.Counters[0], want)
			assert.True(t, tc.policy.Decide(got.Counters[0], tc.st).Accept)
		})
	}
}

func TestFairUseValidate(t *testing.T) {
	assert.Error(t, FairUse{}.Validate())
	assert.NoError(t, FairUse{Base: Posted{}}.Validate())
	assert.Error(t, FairUse{Base: Posted{}, MinTimeLimit: time.Hour, MaxTimeLimit: time.Minute}.Validate())
	assert.Error(t, FairUse{Base: Posted{}, MaxRunning: -1}.Validate())
	assert.Error(t, FairUse{Base: Posted{MaxTimeLimit: -1}}.Validate())
	assert.Equal(t, "fair-use preempting reserve", FairUse{Base: Preempting{Base: Posted{}}}.String())
}
