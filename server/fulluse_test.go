package server

import (
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/contract"
)

// TestFullUse: the fallback meter counts every GPU busy from Track to
// Stop, U = GPUs × T, and nothing after Stop.
func TestFullUse(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	m := FullUse{Now: clock}
	if m.Kind() != contract.MeterFullUse {
		t.Errorf("Kind %q", m.Kind())
	}
	g, err := m.Track([]contract.GPU{{Index: 0}, {Index: 3}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(1500 * time.Millisecond)
	if u, e := g.Read(); !u.Equal(decimal.RequireFromString("3")) || !e.IsZero() {
		t.Errorf("after 1.5 s on 2 GPUs: U %s, energy %s; want 3 and 0", u, e)
	}
	g.Stop()
	now = now.Add(time.Hour)
	g.Stop()
	if u, _ := g.Read(); !u.Equal(decimal.RequireFromString("3")) {
		t.Errorf("U %s after Stop; want it fixed at 3", u)
	}
}
