package console

import (
	"context"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/currency"
)

// statementPage is how many entries one page of an account's statement
// shows: a busy wallet has thousands, and one table of them all was a
// page no one could find anything in.
const statementPage = 50

// chartPoints bounds the points of an account's balance chart: more
// than a 720-pixel chart can show, few enough to keep for any account.
const chartPoints = 4 * currency.MaxPage

type accountView struct {
	Account currency.Account
	Balance currency.Balance
	Scale   int32
	// Entries are one page of the statement, newest first.
	Entries []currency.Entry
	pager
	Chart template.HTML
}

// pager says where a page of a statement stands: First and Last are the
// sequence numbers of its oldest and newest entries, Count the
// account's newest: "entries 51–100 of 230". Newer and Older link the
// neighbouring pages, empty where there is none; Newest the first page,
// where this is not it. The template "pager" draws it.
type pager struct {
	First, Last, Count   int64
	Newer, Older, Newest string
}

// statementAt is one page of id's statement, newest first, before the
// entry numbered raw (the newest page if raw is empty), last being its
// newest entry's number; link makes a page's link from the number it is
// before. Statement reads forward from a sequence number, and an
// account's entries are numbered 1, 2, … (a compacted account's first
// line, the carried-forward one, stands for all that came before it), so
// a page is found by its numbers alone.
func statementAt(ctx context.Context, l currency.Ledger, id currency.AccountID, last int64, raw string, link func(before int64) string) ([]currency.Entry, pager, error) {
	pg := pager{Count: last}
	before := last + 1
	if raw != "" {
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || n < 1 {
			return nil, pg, &bourse.Error{Code: bourse.EInvalid, Field: "before", Message: fmt.Sprintf("%q is not an entry's number", raw)}
		}
		before = min(n, last+1)
	}
	page, err := l.Statement(ctx, id, max(before-1-statementPage, 0), statementPage)
	if err != nil {
		return nil, pg, err
	}
	var entries []currency.Entry
	for _, e := range page {
		if e.Seq < before {
			entries = append(entries, e)
		}
	}
	slices.Reverse(entries)
	if n := len(entries); n > 0 {
		newest, oldest := entries[0], entries[n-1]
		pg.First, pg.Last = oldest.Seq, newest.Seq
		if newest.Seq < last {
			pg.Newer, pg.Newest = link(min(newest.Seq+1+statementPage, last+1)), link(last+1)
		}
		if oldest.Seq > 1 && oldest.Movement != currency.CarriedForward {
			pg.Older = link(oldest.Seq)
		}
	}
	return entries, pg, nil
}

// account is an account's statement, newest first, a page at a time:
// ?before=SEQ shows the entries before SEQ (statementAt).
func (c *Console) account(r *http.Request, v *view) error {
	v.Page, v.Title = "account", "Account"
	ctx := r.Context()
	l := c.cfg.Treasury.Ledger()
	q := r.URL.Query()
	id := currency.AccountID(q.Get("id"))
	a, err := l.Account(ctx, id)
	if err != nil {
		return err
	}
	v.Title = string(id)
	cur, err := l.Currency(ctx, a.Currency)
	if err != nil {
		return err
	}
	b, err := l.Balance(ctx, id)
	if err != nil {
		return err
	}
	s, last, err := balanceHistory(ctx, l, id)
	if err != nil {
		return err
	}
	av := accountView{Account: a, Balance: b, Scale: cur.Scale,
		Chart: lineChart("balance of "+string(id), []series{s}, 720, 220)}
	link := func(before int64) string {
		u := url.Values{"id": {string(id)}}
		if before <= last {
			u.Set("before", strconv.FormatInt(before, 10))
		}
		return "/account?" + u.Encode()
	}
	if av.Entries, av.pager, err = statementAt(ctx, l, id, last, q.Get("before"), link); err != nil {
		return err
	}
	v.Data = av
	return nil
}

// balanceHistory is id's balance after each of its entries, for the
// chart, and the number of its newest entry. An account with more than
// chartPoints entries is drawn from every second (fourth, …) of them, and
// its newest, so that the line still ends at today's balance.
func balanceHistory(ctx context.Context, l currency.Ledger, id currency.AccountID) (series, int64, error) {
	s := series{Name: string(id)}
	var after, last int64
	stride, n := int64(1), int64(0)
	var tail currency.Entry
	for {
		page, err := l.Statement(ctx, id, after, currency.MaxPage)
		if err != nil {
			return series{}, 0, err
		}
		for _, e := range page {
			if n%stride == 0 {
				if len(s.At) == chartPoints {
					s.At, s.Y = everyOther(s.At), everyOther(s.Y)
					stride *= 2
				}
				if n%stride == 0 {
					s.At, s.Y = append(s.At, e.At), append(s.Y, e.Balance.InexactFloat64())
				}
			}
			n++
			tail, last = e, e.Seq
		}
		if len(page) < currency.MaxPage {
			break
		}
		after = page[len(page)-1].Seq
	}
	if n > 0 && (n-1)%stride != 0 {
		s.At, s.Y = append(s.At, tail.At), append(s.Y, tail.Balance.InexactFloat64())
	}
	return s, last, nil
}

func everyOther[T any](xs []T) []T {
	out := xs[:0]
	for i := 0; i < len(xs); i += 2 {
		out = append(out, xs[i])
	}
	return out
}
