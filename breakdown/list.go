package breakdown

import (
	"context"
	"time"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
)

// Listing contracts newest first, by what they are (a client's, a
// server's, in a state), from a Source that lists them by the time they
// were accepted: the console's Contracts page and bourse admin contracts.

// Filter keeps the contracts of a client, of a server, in a state (each
// empty for any).
type Filter struct{ Client, Server, State string }

// Keep reports whether f keeps k.
func (f Filter) Keep(k contract.Contract) bool {
	return (f.Client == "" || k.Client == f.Client) && (f.Server == "" || k.Server == f.Server) && (f.State == "" || string(k.State) == f.State)
}

// Matching reads up to limit contracts that f keeps, of those accepted
// in [from, to) after the contract after, earliest first, and whether
// there may be more. A filter may keep few of a page of the store's: it
// reads on until it has limit, or the range is done.
func Matching(ctx context.Context, src Source, from, to time.Time, after string, f Filter, limit int) ([]contract.Contract, bool, error) {
	var out []contract.Contract
	for {
		ks, err := src.Between(ctx, from, to, after, currency.MaxPage)
		if err != nil {
			return nil, false, err
		}
		for i, k := range ks {
			after = k.ID
			if f.Keep(k) {
				out = append(out, k)
				if len(out) == limit {
					return out, i < len(ks)-1 || len(ks) == currency.MaxPage, nil
				}
			}
		}
		if len(ks) < currency.MaxPage {
			return out, false, nil
		}
	}
}

// Cursor is where a newest-first page of contracts begins: before the
// contract accepted At with id ID (before At, if ID is empty).
type Cursor struct {
	At time.Time
	ID string
}

// firstSpan is how far back newest first reads at a time, to begin with:
// a span that holds too few contracts is doubled, so that a quiet range
// costs a few reads and a busy one reads little more than a page.
const firstSpan = 10 * time.Minute

// Newest reads up to limit contracts f keeps, of those accepted in
// [from, cur), newest first (the latest accepted first, ties by id,
// highest first: the store's order backwards), and whether there may be
// more. The store lists a range earliest first, so it reads spans
// backwards from the cursor, each whole, doubling a span that brings too
// few.
func Newest(ctx context.Context, src Source, from time.Time, cur Cursor, f Filter, limit int) ([]contract.Contract, bool, error) {
	var out []contract.Contract
	hi := cur.At
	if cur.ID != "" {
		// The contracts accepted at the cursor's very time whose ids
		// come before the cursor's: the rest of its instant.
		ks, err := between(ctx, src, cur.At, cur.At.Add(time.Microsecond))
		if err != nil {
			return nil, false, err
		}
		for i := len(ks) - 1; i >= 0; i-- {
			if k := ks[i]; k.AcceptedAt.Equal(cur.At) && k.ID < cur.ID && f.Keep(k) {
				out = append(out, k)
			}
		}
	}
	for span := firstSpan; len(out) <= limit && hi.After(from); span *= 2 {
		lo := hi.Add(-span)
		if lo.Before(from) {
			lo = from
		}
		ks, err := between(ctx, src, lo, hi)
		if err != nil {
			return nil, false, err
		}
		for i := len(ks) - 1; i >= 0; i-- {
			if f.Keep(ks[i]) {
				out = append(out, ks[i])
			}
		}
		hi = lo
	}
	if len(out) > limit {
		return out[:limit], true, nil
	}
	return out, false, nil
}

// between reads every contract accepted in [from, to), earliest first.
func between(ctx context.Context, src Source, from, to time.Time) ([]contract.Contract, error) {
	var out []contract.Contract
	after := ""
	for {
		ks, err := src.Between(ctx, from, to, after, currency.MaxPage)
		if err != nil {
			return nil, err
		}
		out = append(out, ks...)
		if len(ks) < currency.MaxPage {
			return out, nil
		}
		after = ks[len(ks)-1].ID
	}
}
