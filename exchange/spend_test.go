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
