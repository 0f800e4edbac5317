package caps

import (
	"testing"
	"time"
)

// The memory of budgets made forgets those of ended periods, so that an
// exchange running for months does not keep one per owner per hour; a
// spend rate's budget, which never ends, stays.
func TestMadeForgetsEndedPeriods(t *testing.T) {
	var b made
	at := time.Date(2026, 11, 25, 10, 30, 0, 0, time.UTC)
	for h := range 48 {
		now := at.Add(time.Duration(h) * time.Hour)
		_, ends := Hour.Span(now)
		w := BudgetWallet("acme", "CRED", Hour, now)
		b.remember(w, ends, now)
		if !b.has(w) {
			t.Fatalf("hour %d: %s forgotten while its period runs", h, w)
		}
	}
	b.remember(BucketWallet("acme", "CRED"), time.Time{}, at.Add(48*time.Hour))
	if got := b.len(); got > 3 {
		t.Errorf("%d budgets remembered after 48 hours of an hourly cap; want this hour's, at most the last one's, and the rate's", got)
	}
	if !b.has(BucketWallet("acme", "CRED")) {
		t.Error("a spend rate's budget was forgotten")
	}
}
