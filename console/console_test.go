package console

import (
	"context"
	"html/template"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/mem"
	"github.com/bourse/bourse/exchange/memstore"
	"github.com/bourse/bourse/treasury"
)

// testUsers are ann, an admin, and vic, a viewer, with bcrypt's cheapest
// cost so that tests log in fast.
func testUsers(t testing.TB) Users {
	us := Users{}
	for _, u := range []struct {
		name string
		role Role
	}{{"ann", Admin}, {"vic", Viewer}} {
		h, err := bcrypt.GenerateFromPassword([]byte(u.name+"-password"), bcrypt.MinCost)
		require.NoError(t, err)
		us[u.name] = User{Name: u.name, Role: u.role, hash: h}
	}
	return us
}

// testConsole serves a console over an in-memory ledger with CRED, the
// organisation acme and its client alice.
func testConsole(t testing.TB) (*httptest.Server, *treasury.Treasury, *memstore.Store) {
	cfg, tr, store := testConfig(t)
	srv, _ := serve(t, cfg)
	return srv, tr, store
}

// serve serves a console of cfg.
func serve(t testing.TB, cfg Config) (*httptest.Server, *Console) {
	c, err := New(cfg)
	require.NoError(t, err)
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	return srv, c
}

// testConfig is testConsole's configuration, for tests that change it.
func testConfig(t testing.TB) (Config, *treasury.Treasury, *memstore.Store) {
	return testConfigOn(t, nil)
}

// testConfigOn is testConfig with one clock for the console, its
// treasury and its ledger (the wall clock if nil): a test that fixed the
// console's clock and let the treasury read the wall clock would pass
// only on the day it was written.
func testConfigOn(t testing.TB, now func() time.Time) (Config, *treasury.Treasury, *memstore.Store) {
	ctx := context.Background()
	l := mem.New(mem.Options{Now: now})
	store := memstore.New(l)
	tr := treasury.New(treasury.NewMem(l, now), nil)
	require.NoError(t, l.CreateCurrency(ctx, currency.Currency{Code: "CRED", Scale: 2}))
	_, err := tr.Open(ctx, "root", "CRED", "acme", "", "open-acme")
	require.NoError(t, err)
	_, err = tr.Open(ctx, "root", "CRED", "alice", "acme", "open-alice")
	require.NoError(t, err)
	return Config{Treasury: tr, Contracts: store, Users: testUsers(t), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: now}, tr, store
}

type browser struct {
	t   testing.TB
	srv *httptest.Server
	c   *http.Client
}

func newBrowser(t testing.TB, srv *httptest.Server) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, srv: srv, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (b *browser) get(path string) (int, string) {
	b.t.Helper()
	resp, err := b.c.Get(b.srv.URL + path)
	require.NoError(b.t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func (b *browser) post(path string, form url.Values, origin string) (int, string, string) {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, b.srv.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := b.c.Do(req)
	require.NoError(b.t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), resp.Header.Get("Location")
}

func (b *browser) login(user string) {
	b.t.Helper()
	code, _, loc := b.post("/login", url.Values{"user": {user}, "password": {user + "-password"}, "next": {"/"}}, b.srv.URL)
	require.Equal(b.t, http.StatusSeeOther, code)
	require.Equal(b.t, "/", loc)
}

var hiddenRE = regexp.MustCompile(`name="(csrf|key)" value="([^"]+)"`)

// hidden reads the page's CSRF token and form key.
func (b *browser) hidden(path string) (csrf, key string) {
	b.t.Helper()
	_, body := b.get(path)
	for _, m := range hiddenRE.FindAllStringSubmatch(body, -1) {
		if m[1] == "csrf" {
			csrf = m[2]
		} else {
			key = m[2]
		}
	}
	require.NotEmpty(b.t, csrf, "no CSRF token on %s", path)
	return csrf, key
}

func TestLoginRequired(t *testing.T) {
	srv, _, _ := testConsole(t)
	b := newBrowser(t, srv)
	code, _ := b.get("/caps")
	assert.Equal(t, http.StatusSeeOther, code, "pages send you to log in")
	code, _, _ = b.post("/grant", url.Values{"owner": {"alice"}}, srv.URL)
	assert.Equal(t, http.StatusUnauthorized, code)
	code, body, _ := b.post("/login", url.Values{"user": {"ann"}, "password": {"wrong"}}, srv.URL)
	assert.Equal(t, http.StatusUnauthorized, code)
	assert.Contains(t, body, "wrong user or password")
	code, _, loc := b.post("/login", url.Values{"user": {"ann"}, "password": {"ann-password"}, "next": {"//evil.example/"}}, srv.URL)
	assert.Equal(t, http.StatusSeeOther, code)
	assert.Equal(t, "/", loc, "no redirect off the site")
}

func TestLoginThrottled(t *testing.T) {
	srv, _, _ := testConsole(t)
	b := newBrowser(t, srv)
	var codes []int
	for range 7 {
		code, _, _ := b.post("/login", url.Values{"user": {"vic"}, "password": {"guess"}}, srv.URL)
		codes = append(codes, code)
	}
	assert.Equal(t, []int{401, 401, 401, 401, 401, 429, 429}, codes, "five tries at once, then one every 12 s")
	code, _, _ := b.post("/login", url.Values{"user": {"vic"}, "password": {"vic-password"}}, srv.URL)
	assert.Equal(t, http.StatusTooManyRequests, code, "even the right password waits")
}

func TestGrantIdempotentAndAudited(t *testing.T) {
	srv, tr, _ := testConsole(t)
	b := newBrowser(t, srv)
	b.login("ann")
	csrf, key := b.hidden("/")
	form := url.Values{"csrf": {csrf}, "key": {key}, "back": {"/"}, "form": {"grant"}, "owner": {"alice"}, "currency": {"CRED"}, "amount": {"25.5"}}
	for range 2 {
		code, _, loc := b.confirm("/grant", form)
		require.Equal(t, http.StatusSeeOther, code)
		assert.True(t, strings.HasPrefix(loc, "/?done="), loc)
	}
	bal, err := tr.Ledger().Balance(context.Background(), "wallet/CRED/alice")
	require.NoError(t, err)
	assert.True(t, bal.Available.Equal(decimal.RequireFromString("25.5")), "a double submit grants once: %s", bal.Available)
	acts, err := tr.Actions(context.Background(), "", 10)
	require.NoError(t, err)
	assert.Equal(t, "ann", acts[0].Actor, "the logged-in user is the actor")
	assert.Equal(t, treasury.KindGrant, acts[0].Kind)
	_, body := b.get("/")
	assert.Contains(t, body, "25.50")
	_, body = b.get("/audit")
	assert.Contains(t, body, "ann")
}

func TestCSRFAndOrigin(t *testing.T) {
	srv, _, _ := testConsole(t)
	b := newBrowser(t, srv)
	b.login("ann")
	csrf, key := b.hidden("/")
	form := url.Values{"csrf": {"forged"}, "key": {key}, "owner": {"alice"}, "currency": {"CRED"}, "amount": {"1"}}
	code, _, _ := b.post("/grant", form, srv.URL)
	assert.Equal(t, http.StatusForbidden, code, "a wrong CSRF token")
	form.Set("csrf", csrf)
	code, _, _ = b.post("/grant", form, "https://evil.example")
	assert.Equal(t, http.StatusForbidden, code, "another origin")
	code, _, _ = b.confirm("/grant", form)
	assert.Equal(t, http.StatusSeeOther, code)
}

func TestViewerCannotWrite(t *testing.T) {
	srv, _, _ := testConsole(t)
	b := newBrowser(t, srv)
	b.login("vic")
	_, body := b.get("/")
	assert.NotContains(t, body, `action="/grant"`, "a viewer sees no forms")
	csrf, _ := b.hidden("/")
	code, body, _ := b.post("/grant", url.Values{"csrf": {csrf}, "key": {"k"}, "owner": {"alice"}, "currency": {"CRED"}, "amount": {"1"}}, srv.URL)
	assert.Equal(t, http.StatusForbidden, code)
	assert.Contains(t, body, "vic is a viewer")
	for _, p := range []string{"/", "/supply", "/allowances", "/caps", "/rates", "/report", "/audit", "/account?id=wallet/CRED/alice"} {
		code, _ := b.get(p)
		assert.Equal(t, http.StatusOK, code, p)
	}
}

func TestBadInputComesBack(t *testing.T) {
	srv, _, _ := testConsole(t)
	b := newBrowser(t, srv)
	b.login("ann")
	csrf, key := b.hidden("/")
	code, body, _ := b.post("/grant", url.Values{"csrf": {csrf}, "key": {key}, "back": {"/"}, "form": {"grant"}, "owner": {"alice"}, "currency": {"CRED"}, "amount": {"twelve"}}, srv.URL)
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, body, `<code>invalid</code> (amount): &#34;twelve&#34; is not a number`)
	assert.Contains(t, body, `value="twelve"`, "what was typed comes back")
	assert.Contains(t, body, `value="`+key+`"`, "with its key: the retry is the same action")

	code, body, _ = b.post("/burn", url.Values{"csrf": {csrf}, "key": {"b1"}, "back": {"/"}, "form": {"burn"}, "owner": {"alice"}, "currency": {"CRED"}, "amount": {"5"}}, srv.URL)
	assert.Equal(t, http.StatusConflict, code)
	assert.Contains(t, body, "insufficient_funds")

	csrf, key = b.hidden("/allowances")
	code, body, _ = b.post("/allowance", url.Values{"csrf": {csrf}, "key": {key}, "back": {"/allowances"}, "form": {"allowance"}, "owner": {"alice"}, "currency": {"CRED"}, "a": {"0"}, "b": {"0"}}, srv.URL)
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, body, "a and b are both zero")
}

func TestPages(t *testing.T) {
	srv, tr, _ := testConsole(t)
	ctx := context.Background()
	_, err := tr.Grant(ctx, "root", "CRED", "alice", decimal.NewFromInt(100), "g", "")
	require.NoError(t, err)
	b := newBrowser(t, srv)
	b.login("ann")
	csrf, _ := b.hidden("/")
	post := func(path string, kv ...string) {
		t.Helper()
		form := url.Values{"csrf": {csrf}, "key": {path + kv[1]}, "back": {"/"}}
		for i := 0; i < len(kv); i += 2 {
			form.Set(kv[i], kv[i+1])
		}
		code, body, _ := b.post(path, form, srv.URL)
		require.Equal(t, http.StatusSeeOther, code, "%s: %s", path, body)
	}
	require.NoError(t, tr.Ledger().CreateCurrency(ctx, currency.Currency{Code: "GPUH", Scale: 0}))
	post("/allowance", "owner", "alice", "currency", "CRED", "a", "10", "b", "0.1", "period", "1h")
	post("/cap", "client", "alice", "gpus", "4")
	post("/spend-cap", "owner", "acme", "currency", "CRED", "period", "month", "limit", "500", "warn", "0.8")
	post("/spend-rate", "owner", "alice", "currency", "CRED", "capacity", "50", "per_hour", "20", "warn", "0.8")
	post("/rate", "from", "CRED", "to", "GPUH", "rate", "0.5")
	post("/exchange", "owner", "alice", "from", "CRED", "to", "GPUH", "amount", "10")
	post("/open", "owner", "bob", "currency", "CRED", "parent", "acme")
	for path, want := range map[string]string{
		"/":                             "with everything under it",
		"/allowances":                   "100.00", // a/b
		"/caps":                         "rate",
		"/rates":                        "0.5",
		"/supply":                       "supply of CRED",
		"/report":                       "Cost by organisation",
		"/audit":                        "exchange",
		"/account?id=wallet/GPUH/alice": "exchange at 0.5",
	} {
		code, body := b.get(path)
		assert.Equal(t, http.StatusOK, code, path)
		assert.Contains(t, body, want, path)
		if path == "/allowances" || path == "/supply" || path == "/report" || strings.HasPrefix(path, "/account") {
			assert.Contains(t, body, `<svg class="chart"`, path)
		}
	}
	_, capsPage := b.get("/caps")
	assert.Contains(t, capsPage, `<svg class="bar"`)
	code, _ := b.get("/no-such-page")
	assert.Equal(t, http.StatusNotFound, code)
	_, reportPage := b.get("/report?capacity=gpu1%3D8")
	assert.Contains(t, reportPage, "utilisation, %")
	code, body := b.get("/report?capacity=gpu1")
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, body, "SERVER=GPUS")
	code, _ = b.get("/report?from=yesterday")
	assert.Equal(t, http.StatusBadRequest, code)
	code, _ = b.get("/report?by=week")
	assert.Equal(t, http.StatusBadRequest, code)
	code, body = b.get("/account?id=wallet/CRED/nobody")
	assert.Equal(t, http.StatusNotFound, code)
	assert.Contains(t, body, "not_found")
}

// TestSale sets a price and sells on the rates page: a double submit
// sells once, a buyer who cannot pay gets the form back with the error and
// his values under the same key and nothing moves, and a viewer sees the
// prices but no forms and may not sell.
func TestSale(t *testing.T) {
	srv, tr, _ := testConsole(t)
	ctx := context.Background()
	require.NoError(t, tr.Ledger().CreateCurrency(ctx, currency.Currency{Code: "EUR", Scale: 2}))
	_, err := tr.Open(ctx, "root", "EUR", "acme", "", "open-acme-eur")
	require.NoError(t, err)
	_, err = tr.Open(ctx, "root", "EUR", "alice", "acme", "open-alice-eur")
	require.NoError(t, err)
	_, err = tr.Grant(ctx, "root", "EUR", "alice", decimal.NewFromInt(50), "paid-alice", "bank transfer")
	require.NoError(t, err)
	balance := func(id currency.AccountID) string {
		t.Helper()
		b, err := tr.Ledger().Balance(ctx, id)
		require.NoError(t, err)
		return b.Available.String()
	}

	b := newBrowser(t, srv)
	b.login("ann")
	csrf, key := b.hidden("/rates")
	code, body, loc := b.post("/price", url.Values{"csrf": {csrf}, "key": {key}, "back": {"/rates"}, "form": {"price"}, "sold": {"CRED"}, "paid_in": {"EUR"}, "price": {"1.25"}}, srv.URL)
	require.Equal(t, http.StatusSeeOther, code, body)
	assert.True(t, strings.HasPrefix(loc, "/rates?done="), loc)
	sale := url.Values{"csrf": {csrf}, "key": {key}, "back": {"/rates"}, "form": {"sell"}, "buyer": {"alice"}, "sold": {"CRED"}, "paid_in": {"EUR"}, "amount": {"10.01"}}
	for range 2 {
		code, body, loc := b.post("/sell", sale, srv.URL)
		require.Equal(t, http.StatusSeeOther, code, body)
		assert.True(t, strings.HasPrefix(loc, "/rates?done="), loc)
	}
	assert.Equal(t, "10.01", balance("wallet/CRED/alice"), "a double submit sells once")
	assert.Equal(t, "37.48", balance("wallet/EUR/alice"), "10.01 × 1.25 = 12.5125, rounded up")
	assert.Equal(t, "12.52", balance(treasury.ProceedsID("CRED", "EUR")))
	acts, err := tr.Actions(ctx, "", 1)
	require.NoError(t, err)
	assert.Equal(t, "ann", acts[0].Actor)
	assert.Equal(t, treasury.KindSale, acts[0].Kind)

	csrf, key = b.hidden("/rates")
	sale.Set("key", key)
	sale.Set("amount", "1000")
	code, body, _ = b.post("/sell", sale, srv.URL)
	assert.Equal(t, http.StatusConflict, code)
	assert.Regexp(t, `action="/sell">\s*<h3>Sell to a buyer</h3>\s*<p class="error" role="alert" id="form-error"><code>insufficient_funds</code>`, body, "the error beside the sell form")
	assert.Contains(t, body, `id="sell-amount" value="1000"`, "what was typed comes back")
	assert.Contains(t, body, `value="`+key+`"`, "with its key: the retry is the same action")
	assert.Equal(t, "10.01", balance("wallet/CRED/alice"), "nothing minted")
	assert.Equal(t, "37.48", balance("wallet/EUR/alice"), "nothing paid")
	sale.Set("amount", "lots")
	code, body, _ = b.post("/sell", sale, srv.URL)
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, body, `<code>invalid</code> (amount): &#34;lots&#34; is not a number`)
	code, body, _ = b.post("/price", url.Values{"csrf": {csrf}, "key": {key}, "back": {"/rates"}, "form": {"price"}, "sold": {"CRED"}, "paid_in": {"CRED"}, "price": {"2"}}, srv.URL)
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, body, `<code>invalid</code> (paid_in)`)

	_, page := b.get("/rates")
	assert.Regexp(t, `<td>CRED</td><td>EUR</td><td class="num">1.25</td><td class="num"><a href="/account\?id=wallet%2fEUR%2fsales%3aCRED">12.52</a></td><td>ann</td>`, page)
	code, page = b.get("/account?id=wallet%2fEUR%2fsales%3aCRED")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, page, "purchase of 10.01 CRED at 1.25 EUR", "the proceeds wallet's statement")
	_, page = b.get("/supply?currency=CRED")
	assert.Contains(t, page, "sale at 1.25 EUR per CRED", "the mint in the supply's history says it was a sale")

	v := newBrowser(t, srv)
	v.login("vic")
	code, page = v.get("/rates")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, page, "1.25")
	assert.NotContains(t, page, `action="/sell"`, "a viewer sees no forms")
	assert.NotContains(t, page, `action="/price"`)
	csrf, _ = v.hidden("/rates")
	code, body, _ = v.post("/sell", url.Values{"csrf": {csrf}, "key": {"vic-1"}, "buyer": {"alice"}, "sold": {"CRED"}, "paid_in": {"EUR"}, "amount": {"1"}}, srv.URL)
	assert.Equal(t, http.StatusForbidden, code)
	assert.Contains(t, body, "vic is a viewer")
	assert.Equal(t, "10.01", balance("wallet/CRED/alice"))
}

// TestAllowancesSayWhenPaid: the Allowances page tells when and where
// allowances are paid in the treasury's words, which bourse admin
// allowance --help gives too, not "cron".
func TestAllowancesSayWhenPaid(t *testing.T) {
	srv, _, _ := testConsole(t)
	b := newBrowser(t, srv)
	b.login("vic")
	_, body := b.get("/allowances")
	assert.Contains(t, body, template.HTMLEscapeString(treasury.AllowancesPaid))
	assert.NotContains(t, body, "(cron) pays them")
}
