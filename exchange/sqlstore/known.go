package sqlstore

import (
	"sync"

	"github.com/bourse/bourse/contract"
)

// known keeps, for the contracts that this store wrote last, the record
// written and the contract it encodes. An
// Update's change then decides on a clone of that contract before the
// group's first round trip, so that the rows its ledger operations need
// are read with the contract's own row instead of in a round trip of their
// own; the decision stands if the row comes back byte for byte the record
// known, and is taken again on the row otherwise (another instance wrote
// it, or a commit that failed after all). So a stale entry costs what no
// entry does, and never a wrong decision. The contract known is the one
// its record was encoded from, not the record decoded again: equal in
// value, as the in-memory store's contracts are.
//
// Memory: two generations of at most max/2 entries each; a contract ages
// out when the older generation is dropped, unless written again. Settled
// and voided contracts are kept too: a settled contract changes no more,
// but Updates still come to it, each deciding that nothing changes (a
// final reading heard both from the usage stream and in its server's
// question for a receipt, the sweep's look at a contract another
// instance settled), and each would otherwise decode the row. At 16
// clients on PostgreSQL (BenchmarkOffers, 2026-12-02) those decodings
// were most of the records the store decoded.
type known struct {
	mu       sync.Mutex
	max      int
	cur, old map[[16]byte]knownRow
}

type knownRow struct {
	rec record
	c   contract.Contract
}

// knownMax bounds the contracts kept: about 1.5 KB each, 24 MB in all.
const knownMax = 1 << 14

func newKnown(max int) *known {
	return &known{max: max, cur: map[[16]byte]knownRow{}, old: map[[16]byte]knownRow{}}
}

// get returns the record known for uid and a clone of its contract, for a
// change to write into.
func (k *known) get(uid [16]byte) (record, contract.Contract, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	r, ok := k.cur[uid]
	if !ok {
		if r, ok = k.old[uid]; !ok {
			return nil, contract.Contract{}, false
		}
	}
	return r.rec, r.c.Clone(), true
}

// put notes that rec, the encoding of c, is uid's row as committed.
func (k *known) put(uid [16]byte, rec record, c *contract.Contract) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.old, uid)
	if _, ok := k.cur[uid]; !ok && len(k.cur) >= k.max/2 {
		k.old, k.cur = k.cur, make(map[[16]byte]knownRow, k.max/2)
	}
	k.cur[uid] = knownRow{rec: rec, c: c.Clone()}
}

// len is how many contracts are known, for tests.
func (k *known) len() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.cur) + len(k.old)
}
