package console

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// viaProxy posts a login to c from peer, with X-Forwarded-For xff.
func viaProxy(t testing.TB, c *Console, peer, xff, user string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(url.Values{"user": {user}, "password": {"guess"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.RemoteAddr = peer + ":50000"
	if xff != "" {
		req.Header.Set("X-Forwarded-For", xff)
	}
	rec := httptest.NewRecorder()
	c.ServeHTTP(rec, req)
	return rec
}

// TestBehindProxy: behind a trusted proxy, the throttle keys on the
// client's address from X-Forwarded-For, not on the proxy's (which every
// client shares), and not on what the client wrote into the header
// itself; cookies are Secure; a request around the proxy is refused.
func TestBehindProxy(t *testing.T) {
	cfg, _, _ := testConfig(t)
	cfg.Secure = true
	cfg.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/24")}
	c := func() *Console { c, err := New(cfg); require.NoError(t, err); return c }()
	const proxy = "10.0.0.2"

	var last int
	for i := range 6 {
		// A client who makes up a new address for each guess: the
		// proxy appends the one it saw, and that is the one counted.
		last = viaProxy(t, c, proxy, fmt.Sprintf("192.0.2.%d, 203.0.113.5", i), fmt.Sprint("name", i)).Code
	}
	assert.Equal(t, http.StatusTooManyRequests, last, "203.0.113.5 is throttled after five")
	assert.Equal(t, http.StatusUnauthorized, viaProxy(t, c, proxy, "198.51.100.8", "name9").Code, "another client through the same proxy is not")
	assert.Equal(t, http.StatusUnauthorized, viaProxy(t, c, proxy, "198.51.100.9, 10.0.0.7", "name10").Code,
		"a chain of trusted proxies: the last address not one of them")

	rec := viaProxy(t, c, "198.51.100.20", "10.0.0.2", "name11")
	assert.Equal(t, http.StatusForbidden, rec.Code, "a request around the proxy")
	assert.Contains(t, rec.Body.String(), "through its proxy only")

	req := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(url.Values{"user": {"vic"}, "password": {"vic-password"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.RemoteAddr = proxy + ":50000"
	req.Header.Set("X-Forwarded-For", "198.51.100.30")
	rr := httptest.NewRecorder()
	c.ServeHTTP(rr, req)
	require.Equal(t, http.StatusSeeOther, rr.Code)
	cookies := rr.Result().Cookies()
	require.NotEmpty(t, cookies)
	for _, ck := range cookies {
		assert.True(t, ck.Secure, "%s is Secure", ck.Name)
	}
	assert.Equal(t, "max-age=31536000", rr.Header().Get("Strict-Transport-Security"))
}

// TestForwardedForIgnored: without trusted proxies a client's
// X-Forwarded-For is ignored: it cannot pick the address it is throttled
// on.
func TestForwardedForIgnored(t *testing.T) {
	c := frozen(t)
	var last int
	for i := range 6 {
		last = viaProxy(t, c, "203.0.113.5", fmt.Sprintf("192.0.2.%d", i), fmt.Sprint("name", i)).Code
	}
	assert.Equal(t, http.StatusTooManyRequests, last)
}
