package console

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRefresh: the lists carry the refresh script and its interval; a
// page drawn for a POST (a form's error, a confirmation) and the
// sessions page do not; only the console's own script may run.
func TestRefresh(t *testing.T) {
	srv, _, _ := testConsole(t)
	b := newBrowser(t, srv)
	b.login("ann")
	for _, p := range []string{"/", "/audit", "/contracts", "/supply", "/account?id=wallet/CRED/alice"} {
		_, page := b.get(p)
		assert.Contains(t, page, `<body data-refresh="30">`, p)
		assert.Contains(t, page, `<script src="/static/refresh.js" defer></script>`, p)
		assert.Contains(t, page, `<button type="button" id="refresh-toggle" hidden>Pause refresh</button>`, p)
	}
	_, page := b.get("/sessions")
	assert.NotContains(t, page, "data-refresh", "a page with a password form")
	csrf, key := b.hidden("/")
	form := url.Values{"csrf": {csrf}, "key": {key}, "back": {"/"}, "form": {"grant"}, "owner": {"alice"}, "currency": {"CRED"}, "amount": {"1"}}
	_, page, _ = b.post("/grant", form, srv.URL)
	require.Contains(t, page, `id="confirm-form"`)
	assert.NotContains(t, page, "data-refresh", "a confirmation")
	form.Set("amount", "x")
	_, page, _ = b.post("/grant", form, srv.URL)
	assert.NotContains(t, page, "data-refresh", "a form that came back")

	resp, err := http.Get(srv.URL + "/static/refresh.js")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "text/javascript"), resp.Header.Get("Content-Type"))
	csp := resp.Header.Get("Content-Security-Policy")
	assert.Contains(t, csp, "script-src 'self';")
	assert.NotContains(t, csp, "unsafe")

	cfg, _, _ := testConfig(t)
	cfg.Refresh = -time.Second
	never, _ := serve(t, cfg)
	nb := newBrowser(t, never)
	nb.login("ann")
	_, page = nb.get("/")
	assert.NotContains(t, page, "data-refresh", "refresh off")
	assert.NotContains(t, page, "<script")
}
