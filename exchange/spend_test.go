package exchange

import (
	"testing"
	"time"
)

func TestSpendPeriods(t *testing.T) {
	at := time.Date(2026, 12, 31, 23, 59, 59, 0, time.FixedZone("CET", 3600))
	for _, c := range []struct {
		p     SpendPeriod
		label string
		ends  time.Time
	}{
		{Hourly, "2026-12-31T22", time.Date(2026, 12, 31, 23, 0, 0, 0, time.UTC)},
		{Daily, "2026-12-31", time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
		{Monthly, "2026-12", time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		label, ends := c.p.label(at)
		if label != c.label || !ends.Equal(c.ends) {
			t.Errorf("%s: %s ending %s, want %s ending %s (periods are UTC)", c.p, label, ends, c.label, c.ends)
		}
	}
	if got := SpendWallet("acme", "CRED", Hourly, at); got != "wallet/SPEND-CRED/acme@hour.2026-12-31T22" {
		t.Errorf("SpendWallet = %s", got)
	}
	if SpendPeriod("week").Valid() {
		t.Error("week is not a period")
	}
}

// The memory of budgets made forgets those of ended periods, so that an
// exchange running for months does not keep one per owner per hour; a
// spend rate's budget, which never ends, stays.
func TestBudgetMemoryForgetsEndedPeriods(t *testing.T) {
	var b budgetMemory
	at := time.Date(2026, 11, 25, 10, 30, 0, 0, time.UTC)
	for h := range 48 {
		now := at.Add(time.Duration(h) * time.Hour)
		_, ends := Hourly.label(now)
		w := SpendWallet("acme", "CRED", Hourly, now)
		b.remember(w, ends, now)
		if !b.has(w) {
			t.Fatalf("hour %d: %s forgotten while its period runs", h, w)
		}
	}
	b.remember(SpendWallet("acme", "CRED", Rate, at), time.Time{}, at.Add(48*time.Hour))
	if got := b.len(); got > 3 {
		t.Errorf("%d budgets remembered after 48 hours of an hourly cap; want this hour's, at most the last one's, and the rate's", got)
	}
	if !b.has(SpendWallet("acme", "CRED", Rate, at)) {
		t.Error("a spend rate's budget was forgotten")
	}
}
