package strategy

import (
	"cmp"
	"slices"

	"github.com/bourse/bourse/contract"
)

// CompareCounters is the one order of counter-offers, cheapest first: by
// price per GPU-second at full use (contract.Terms.FullUsePrice), then by
// server, then by id. Counter-offers come in the order their servers
// answered, which changes from one offer to the next; ordered by what
// they say, the same counter-offers always come in the same order, so
// that `bourse bid --take N`, `--auto` and the strategies (here and in the
// simulator) mean the same one.
func CompareCounters(a, b contract.Counter) int {
	if c := a.Terms.FullUsePrice().Cmp(b.Terms.FullUsePrice()); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Server, b.Server); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}

// SortCounters puts ks in CompareCounters' order.
func SortCounters(ks []contract.Counter) { slices.SortStableFunc(ks, CompareCounters) }
