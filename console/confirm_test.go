package console

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/treasury"
)

var hiddenInputRE = regexp.MustCompile(`<input type="hidden" name="([a-z_]+)" value="([^"]*)">`)

// confirmForm is the confirmation form's fields on a page, nil if the
// page asks for none.
func confirmForm(page string) url.Values {
	i := strings.Index(page, `id="confirm-form"`)
	if i < 0 {
		return nil
	}
	form := page[i:]
	form = form[:strings.Index(form, "</form>")]
	f := url.Values{}
	for _, m := range hiddenInputRE.FindAllStringSubmatch(form, -1) {
		f.Set(m[1], html.UnescapeString(m[2]))
	}
	return f
}

// confirm posts a form and, if the console asks, confirms it as a
// person would: with the confirmation page's own form.
func (b *browser) confirm(path string, form url.Values) (int, string, string) {
	b.t.Helper()
	code, body, loc := b.post(path, form, b.srv.URL)
	f := confirmForm(body)
	if code != http.StatusOK || f == nil {
		return code, body, loc
	}
	return b.post(path, f, b.srv.URL)
}

// TestConfirmation: a grant or a burn is shown before it is done, and
// done only by a POST carrying the confirmation of exactly those values
// in this session; one without it (a forged POST) or with another's
// changes nothing.
func TestConfirmation(t *testing.T) {
	srv, tr, _ := testConsole(t)
	ctx := context.Background()
	balance := func() string {
		t.Helper()
		b, err := tr.Ledger().Balance(ctx, "wallet/CRED/alice")
		require.NoError(t, err)
		return b.Available.String()
	}
	grants := func() int {
		t.Helper()
		acts, err := tr.Actions(ctx, "", 100)
		require.NoError(t, err)
		n := 0
		for _, a := range acts {
			if a.Kind == treasury.KindGrant || a.Kind == treasury.KindBurn {
				n++
			}
		}
		return n
	}
	b := newBrowser(t, srv)
	b.login("ann")
	csrf, key := b.hidden("/")
	grant := url.Values{"csrf": {csrf}, "key": {key}, "back": {"/"}, "form": {"grant"}, "owner": {"alice"}, "currency": {"CRED"}, "amount": {"1000"}, "memo": {"budget"}}

	code, page, _ := b.post("/grant", grant, srv.URL)
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, page, "Mint 1000.00 CRED into alice&#39;s wallet?")
	assert.Regexp(t, `<td class="num">0.00</td><td class="num" id="confirm-wallet">1000.00</td>`, page)
	assert.Regexp(t, `<td class="num">0.00</td><td class="num" id="confirm-supply">1000.00</td>`, page)
	assert.Equal(t, "0", balance(), "a POST without confirmation mints nothing")
	assert.Zero(t, grants(), "and writes nothing in the trail")
	confirmed := confirmForm(page)
	require.NotEmpty(t, confirmed.Get("confirm"))
	for _, f := range []string{"owner", "currency", "amount", "memo", "key", "back", "form"} {
		assert.Equal(t, grant.Get(f), confirmed.Get(f), "the confirmation carries %s", f)
	}

	t.Run("forged", func(t *testing.T) {
		for name, change := range map[string]func(url.Values){
			"a token made up":            func(f url.Values) { f.Set("confirm", "forged") },
			"another amount":             func(f url.Values) { f.Set("amount", "100000") },
			"another owner":              func(f url.Values) { f.Set("owner", "acme") },
			"another key (a new action)": func(f url.Values) { f.Set("key", "other") },
		} {
			f := cloneValues(confirmed)
			change(f)
			code, body, _ := b.post("/grant", f, srv.URL)
			assert.Equal(t, http.StatusForbidden, code, name)
			assert.Contains(t, body, "not for what was sent", name)
		}
		other := newBrowser(t, srv)
		other.login("ann")
		f := cloneValues(confirmed)
		f.Set("csrf", func() string { c, _ := other.hidden("/"); return c }())
		code, _, _ := other.post("/grant", f, srv.URL)
		assert.Equal(t, http.StatusForbidden, code, "a confirmation is the session's own")
		assert.Equal(t, "0", balance())
		assert.Zero(t, grants())
	})

	for range 2 { // a double click on the confirmation is one grant
		code, _, loc := b.post("/grant", confirmed, srv.URL)
		require.Equal(t, http.StatusSeeOther, code)
		assert.Equal(t, "/?done=granted+1000+CRED+to+alice", loc)
	}
	assert.Equal(t, "1000", balance())
	assert.Equal(t, 1, grants())

	csrf, key = b.hidden("/")
	burn := url.Values{"csrf": {csrf}, "key": {key}, "back": {"/"}, "form": {"burn"}, "owner": {"alice"}, "currency": {"CRED"}, "amount": {"2000"}}
	code, page, _ = b.post("/burn", burn, srv.URL)
	assert.Equal(t, http.StatusConflict, code, "a burn of more than the wallet holds is refused before it is confirmed")
	assert.Contains(t, page, "<code>insufficient_funds</code> (amount)")
	assert.Nil(t, confirmForm(page))
	burn.Set("amount", "250.5")
	code, page, _ = b.post("/burn", burn, srv.URL)
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, page, "Destroy 250.50 CRED from alice&#39;s wallet?")
	assert.Contains(t, page, `id="confirm-wallet">749.50<`)
	assert.Contains(t, page, `id="confirm-supply">749.50<`)
	assert.Equal(t, "1000", balance(), "nothing burned yet")
	code, _, _ = b.post("/burn", confirmForm(page), srv.URL)
	require.Equal(t, http.StatusSeeOther, code)
	assert.Equal(t, "749.5", balance())

	for name, c := range map[string]struct {
		field, value, want string
		code               int
	}{
		"too many places": {"amount", "1.001", "<code>invalid</code> (amount): amount 1.001 has more decimal places than CRED&#39;s scale", http.StatusBadRequest},
		"no wallet":       {"owner", "nobody", "<code>not_found</code> (owner): nobody has no CRED wallet: open one first", http.StatusNotFound},
		"no currency":     {"currency", "ZZZ", "unknown_currency", http.StatusNotFound},
		"not a number":    {"amount", "lots", "<code>invalid</code> (amount): &#34;lots&#34; is not a number", http.StatusBadRequest},
	} {
		f := cloneValues(grant)
		f.Set(c.field, c.value)
		code, page, _ := b.post("/grant", f, srv.URL)
		assert.Equal(t, c.code, code, name)
		assert.Contains(t, page, c.want, name)
		assert.Nil(t, confirmForm(page), "%s: nothing to confirm", name)
	}
	assert.Equal(t, 2, grants())
}
