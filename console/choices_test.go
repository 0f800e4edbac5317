package console

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/currency"
)

// TestChoices: the forms offer the currencies in a select and the
// wallets' owners in a datalist; the caps' own units are no choice; a
// form that comes back keeps its choice.
func TestChoices(t *testing.T) {
	srv, tr, _ := testConsole(t)
	ctx := context.Background()
	b := newBrowser(t, srv)
	b.login("ann")
	_, page := b.get("/")
	assert.Contains(t, page, `<datalist id="owners"><option value="acme"><option value="alice"></datalist>`)
	assert.Contains(t, page, `<input name="owner" id="grant-owner" list="owners"`)
	assert.Contains(t, page, `<select name="currency" id="grant-currency" required><option value="">choose…</option><option selected>CRED</option></select>`,
		"the one currency, chosen already")

	require.NoError(t, tr.Ledger().CreateCurrency(ctx, currency.Currency{Code: "EUR", Scale: 2}))
	_, err := tr.Open(ctx, "root", "EUR", "bob", "", "open-bob")
	require.NoError(t, err)
	_, err = tr.SetCap(ctx, "root", "alice", 4, "cap-alice") // opens GPU-CAP's wallets
	require.NoError(t, err)
	for _, path := range []string{"/", "/allowances", "/caps", "/rates"} {
		_, page = b.get(path)
		assert.Contains(t, page, `<option value="">choose…</option><option>CRED</option><option>EUR</option></select>`, path)
		assert.Contains(t, page, `<datalist id="owners"><option value="acme"><option value="alice"><option value="bob"></datalist>`, path)
		assert.NotContains(t, page, "<option>GPU-CAP</option>", path)
	}
	_, page = b.get("/rates")
	assert.Contains(t, page, `<select name="paid_in" id="sell-paid-in" required>`)

	csrf, key := b.hidden("/")
	code, page, _ := b.post("/grant", url.Values{"csrf": {csrf}, "key": {key}, "back": {"/"}, "form": {"grant"}, "owner": {"alice"}, "currency": {"EUR"}, "amount": {"5"}}, srv.URL)
	assert.Equal(t, http.StatusNotFound, code, "alice has no EUR wallet")
	assert.Contains(t, page, `<select name="currency" id="grant-currency" required><option value="">choose…</option><option>CRED</option><option selected>EUR</option></select>`)
	assert.Contains(t, page, `<select name="currency" id="burn-currency" required><option value="">choose…</option><option>CRED</option><option>EUR</option></select>`,
		"the other forms are as they were")
	assert.Contains(t, page, `id="grant-amount" value="5"`)
	assert.Contains(t, page, `id="burn-amount" value=""`, "what was typed in one form is not put in another")

	v := newBrowser(t, srv)
	v.login("vic")
	_, page = v.get("/")
	assert.NotContains(t, page, "<datalist", "a viewer has no forms to fill")
	_, page = v.get("/report")
	assert.Contains(t, page, `<input name="client" list="owners"`, "but filters the report")
	assert.Contains(t, page, `<option value="bob">`)
}
