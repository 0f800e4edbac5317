package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/internal/dectest"
)

// curve builds a curve from x, y pairs written as decimals.
func curve(xy ...string) contract.Curve {
	c := make(contract.Curve, 0, len(xy)/2)
	for i := 0; i < len(xy); i += 2 {
		c = append(c, contract.Point{X: dectest.D(xy[i]), Y: dectest.D(xy[i+1])})
	}
	return c
}

var (
	h100 = func(i int) contract.GPU { return contract.GPU{Index: i, Model: "H100", MemoryMiB: 81920} }
	a100 = func(i int) contract.GPU { return contract.GPU{Index: i, Model: "A100", MemoryMiB: 40960} }
	now  = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
)

// testView is a server of four H100s and two A100s, the given ones busy.
func testView(busy ...int) View {
	st := View{Now: now, Scale: 2}
	for i := range 6 {
		g := h100(i)
		if i >= 4 {
			g = a100(i)
		}
		st.GPUs = append(st.GPUs, g)
		free := true
		for _, b := range busy {
			free = free && b != i
		}
		if free {
			st.Free = append(st.Free, g)
		}
	}
	return st
}

// offer is 2 H100s for 30 minutes at 0.002 per GPU-second, prepaying the
// maximum charge, 7.20.
func offer() contract.Terms {
	return contract.Terms{
		Client: "alice", Currency: "GPU", GPUs: 2, Class: contract.Class{Model: "H100"},
		TimeLimit: 30 * time.Minute, Prepayment: dectest.D("7.20"), P: contract.Flat(dectest.D("0.002")),
	}
}

func TestPostedDecide(t *testing.T) {
	reserve := Posted{P: contract.Flat(dectest.D("0.001")), MaxTimeLimit: time.Hour, CounterTTL: time.Minute}
	with := func(f func(*contract.Terms)) contract.Terms { o := offer(); f(&o); return o }
	for _, tc := range []struct {
		name    string
		reserve Posted
		offer   contract.Terms
		st      View
		accept  bool
		counter func(*contract.Terms) // how the counter differs from the offer; nil for none
	}{
		{name: "pays the reserve", reserve: reserve, offer: offer(), st: testView(), accept: true},
		{name: "pays exactly the reserve", reserve: reserve, st: testView(), accept: true,
			offer: with(func(o *contract.Terms) { o.P = contract.Flat(dectest.D("0.001")); o.Prepayment = dectest.D("3.60") })},
		{name: "any class", reserve: reserve, offer: with(func(o *contract.Terms) { o.Class = contract.Class{}; o.GPUs = 6 }),
			st: testView(), accept: true},
		{name: "cheap p", reserve: reserve, st: testView(),
			offer:   with(func(o *contract.Terms) { o.P = contract.Flat(dectest.D("0.0005")); o.Prepayment = dectest.D("1.80") }),
			counter: func(c *contract.Terms) { c.P, c.Prepayment = contract.Flat(dectest.D("0.001")), dectest.D("3.60") }}, // still all of the maximum
		{name: "no q against a q reserve", st: testView(),
			reserve: Posted{P: reserve.P, Q: contract.Flat(dectest.D("0.01"))}, offer: offer(),
			counter: func(c *contract.Terms) { c.Q, c.Prepayment = contract.Flat(dectest.D("0.01")), dectest.D("25.20") }},
		{name: "too long, prepayment lowered", reserve: reserve, st: testView(),
			offer:   with(func(o *contract.Terms) { o.TimeLimit = 2 * time.Hour; o.Prepayment = dectest.D("28.80") }),
			counter: func(c *contract.Terms) { c.TimeLimit = time.Hour; c.Prepayment = dectest.D("14.40") }},
		{name: "no maximum time limit", reserve: Posted{P: reserve.P}, st: testView(), accept: true,
			offer: with(func(o *contract.Terms) { o.TimeLimit = 300 * time.Hour; o.Prepayment = dectest.D("1") })},
		{name: "more GPUs than free", reserve: reserve, st: testView(0, 1, 2),
			offer:   with(func(o *contract.Terms) { o.GPUs = 3; o.Prepayment = dectest.D("10.80") }),
			counter: func(c *contract.Terms) { c.GPUs = 1; c.Prepayment = dectest.D("3.60") }},
		{name: "more GPUs than the server has", reserve: reserve, st: testView(),
			offer:   with(func(o *contract.Terms) { o.GPUs = 5; o.Prepayment = dectest.D("1") }),
			counter: func(c *contract.Terms) { c.GPUs = 4 }},
		{name: "everything at once", reserve: reserve, st: testView(3),
			offer: with(func(o *contract.Terms) {
				o.GPUs, o.TimeLimit, o.P, o.Prepayment = 4, 3*time.Hour, contract.Flat(dectest.D("0.0001")), dectest.D("4.32")
			}),
			counter: func(c *contract.Terms) {
				c.GPUs, c.TimeLimit, c.P, c.Prepayment = 3, time.Hour, contract.Flat(dectest.D("0.001")), dectest.D("10.80")
			}},
		{name: "cheap p, half the maximum prepaid: half the counter's", reserve: reserve, st: testView(),
			offer:   with(func(o *contract.Terms) { o.P = contract.Flat(dectest.D("0.0005")); o.Prepayment = dectest.D("0.90") }),
			counter: func(c *contract.Terms) { c.P, c.Prepayment = contract.Flat(dectest.D("0.001")), dectest.D("1.80") }},
		{name: "class busy", reserve: reserve, offer: offer(), st: testView(0, 1, 2, 3)},
		{name: "class absent", reserve: reserve, offer: with(func(o *contract.Terms) { o.Class.Model = "B200" }), st: testView()},
		{name: "memory too small", reserve: reserve, st: testView(0, 1, 2, 3),
			offer: with(func(o *contract.Terms) { o.Class = contract.Class{MinMemoryMiB: 50000} })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.reserve.Decide(tc.offer, tc.st)
			assert.Equal(t, tc.accept, got.Accept, got.Reason)
			if tc.accept {
				assert.Empty(t, got.Counters)
				return
			}
			assert.NotEmpty(t, got.Reason)
			if tc.counter == nil {
				assert.Empty(t, got.Counters)
				return
			}
			want := tc.offer
			tc.counter(&want)
			require.Len(t, got.Counters, 1)
			assert.True(t, want.Equal(got.Counters[0]), "counter %+v\nwant    %+v", got.Counters[0], want)
			ttl := tc.reserve.CounterTTL
			if ttl == 0 {
				ttl = DefaultCounterTTL
			}
			assert.Equal(t, tc.st.Now.Add(ttl), got.ValidUntil)
		})
	}
}

func TestPostedValidate(t *testing.T) {
	require.NoError(t, Posted{}.Validate())
	require.NoError(t, Posted{P: contract.Flat(dectest.D("1")), MaxTimeLimit: time.Hour}.Validate())
	require.Error(t, Posted{P: curve("1", "2", "0.5", "3")}.Validate())
	require.Error(t, Posted{Q: curve("0", "2", "1", "1")}.Validate())
	require.Error(t, Posted{MaxTimeLimit: -1}.Validate())
}
