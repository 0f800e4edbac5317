package exchange

import (
	"slices"
	"testing"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/internal/dectest"
)

// TestAskRankOrder: asks are considered cheapest first, those that name
// no price after every priced one, in routing's levels and in matching's
// candidates alike: the ranks of a shuffled set of classes sort into one
// order, and an index filing them holds its levels in it.
func TestAskRankOrder(t *testing.T) {
	class := func(price string) contract.ClassAsk {
		c := contract.ClassAsk{Model: "H100", GPUs: 1, Free: 1}
		if price != "" {
			c.P = contract.Flat(dectest.D(price))
		}
		return c
	}
	prices := []string{"0.003", "", "0.001", "0.002", "0.001"}
	want := []string{"0.001", "0.001", "0.002", "0.003", ""}
	ranks := make([]askRank, len(prices))
	for i, p := range prices {
		ranks[i] = rankOf(class(p))
	}
	slices.SortStableFunc(ranks, func(a, b askRank) int { return a.cmp(b) })
	for i, r := range ranks {
		if w := rankOf(class(want[i])); r.cmp(w) != 0 {
			t.Errorf("rank %d: %v, want the rank of %q", i, r, want[i])
		}
	}

	x := newAsks()
	b := &askBook{}
	x.books[askKey{"CRED", "h100"}] = b
	for _, p := range prices {
		b.level(class(p))
	}
	got := x.levels("CRED", contract.Class{})
	if len(got) != 4 {
		t.Fatalf("%d levels, want 4 (one per price, one unpriced)", len(got))
	}
	for i, l := range got {
		if i > 0 && got[i-1].rank.cmp(l.rank) >= 0 {
			t.Errorf("level %d is not after level %d", i, i-1)
		}
	}
	if got[len(got)-1].rank.priced {
		t.Error("the unpriced level is not last")
	}
}
