package console

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/treasury"
)

// grants gives alice n grants of 1, 2, … n CRED.
func grants(t testing.TB, tr *treasury.Treasury, n int) {
	t.Helper()
	for i := 1; i <= n; i++ {
		_, err := tr.Grant(context.Background(), "root", "CRED", "alice", decimal.NewFromInt(int64(i)), fmt.Sprint("g", i), "")
		require.NoError(t, err)
	}
}

var seqRE = regexp.MustCompile(`<tr><td class="num">(\d+)</td>`)

// seqs are the entry numbers of a statement page, top to bottom.
func seqs(page string) []string {
	var out []string
	for _, m := range seqRE.FindAllStringSubmatch(page, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestAccountPages: a statement of 120 entries is three pages of at most
// 50, newest first, linked both ways; a page number that is not one is
// refused.
func TestAccountPages(t *testing.T) {
	srv, tr, _ := testConsole(t)
	grants(t, tr, 120)
	b := newBrowser(t, srv)
	b.login("ann")

	code, page := b.get("/account?id=wallet/CRED/alice")
	require.Equal(t, http.StatusOK, code)
	s := seqs(page)
	require.Len(t, s, statementPage, "one page, not the whole statement")
	assert.Equal(t, "120", s[0], "newest first")
	assert.Equal(t, "71", s[len(s)-1])
	assert.Contains(t, page, "entries 71–120 of 120")
	assert.Contains(t, page, `<a href="/account?before=71&amp;id=wallet%2FCRED%2Falice" class="older"`)
	assert.NotContains(t, page, `class="newer"`, "the newest page has nothing newer")

	_, page = b.get("/account?before=71&id=wallet%2FCRED%2Falice")
	s = seqs(page)
	assert.Equal(t, []string{"70", "21"}, []string{s[0], s[len(s)-1]})
	assert.Contains(t, page, `<a href="/account?id=wallet%2FCRED%2Falice" class="newer"`, "the page before is the newest")
	assert.Contains(t, page, `before=21&amp;`)

	_, page = b.get("/account?before=21&id=wallet%2FCRED%2Falice")
	s = seqs(page)
	assert.Len(t, s, 20)
	assert.Equal(t, "1", s[len(s)-1])
	assert.NotContains(t, page, `class="older"`, "nothing before the first entry")
	assert.Contains(t, page, `<a href="/account?before=71&amp;id=wallet%2FCRED%2Falice" class="newer"`)
	assert.Contains(t, page, "1.00", "the first grant's amount")

	code, page = b.get("/account?before=zero&id=wallet%2FCRED%2Falice")
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, page, "before")
	code, page = b.get("/account?id=wallet/CRED/acme")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, page, "no entries yet")
	assert.NotContains(t, page, `class="pager"`, "one page needs no pager")
}

// TestBalanceHistory: an account with more entries than a chart draws is
// thinned evenly, and its line ends at today's balance.
func TestBalanceHistory(t *testing.T) {
	_, tr, _ := testConsole(t)
	n := chartPoints + 501
	grants(t, tr, n)
	s, last, err := balanceHistory(context.Background(), tr.Ledger(), "wallet/CRED/alice")
	require.NoError(t, err)
	assert.Equal(t, int64(n), last)
	assert.LessOrEqual(t, len(s.Y), chartPoints+1)
	assert.Greater(t, len(s.Y), chartPoints/2)
	assert.Equal(t, float64(n*(n+1)/2), s.Y[len(s.Y)-1], "the last point is the balance now")
	assert.Equal(t, 1.0, s.Y[0], "the first is the first entry's")
	assert.Equal(t, 6.0, s.Y[1], "then every second one: 1, 1+2+3")

	small, _, err := balanceHistory(context.Background(), tr.Ledger(), "wallet/CRED/acme")
	require.NoError(t, err)
	assert.Empty(t, small.Y)
	assert.False(t, strings.Contains(string(lineChart("x", []series{small}, 100, 100)), "polyline"))
}

var supplyKeyRE = regexp.MustCompile(`<td>(g\d+)</td>`)

// TestSupplyPager: the Supply page lists the supply's history newest
// first, a page at a time, with the pager of an account's statement, so
// that a long history is neither cut at 200 lines nor one long table.
func TestSupplyPager(t *testing.T) {
	srv, tr, _ := testConsole(t)
	grants(t, tr, 120)
	b := newBrowser(t, srv)
	b.login("vic")
	keys := func(page string) []string {
		var out []string
		for _, m := range supplyKeyRE.FindAllStringSubmatch(page, -1) {
			out = append(out, m[1])
		}
		return out
	}
	_, page := b.get("/supply?currency=CRED")
	got := keys(page)
	require.Len(t, got, statementPage)
	assert.Equal(t, "g120", got[0], "newest first")
	assert.Contains(t, page, "entries 71–120 of 120")
	assert.Contains(t, page, `<td class="num">7260.00</td>`, "the supply after the newest grant: 1+…+120")
	m := regexp.MustCompile(`<a href="(/supply\?[^"]+)" class="older"`).FindStringSubmatch(page)
	require.NotNil(t, m)
	_, page = b.get(html.UnescapeString(m[1]))
	assert.Equal(t, "g70", keys(page)[0])
	_, page = b.get("/supply?currency=CRED&before=21")
	assert.Equal(t, []string{"g20", "g19"}, keys(page)[:2])
	assert.Contains(t, page, "entries 1–20 of 120")
	assert.NotContains(t, page, `class="older"`)
	assert.Contains(t, page, `class="newest"`)
	code, _ := b.get("/supply?currency=CRED&before=x")
	assert.Equal(t, http.StatusBadRequest, code)
}
