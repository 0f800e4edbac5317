package console

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostile are next= values that a browser would follow to another host.
var hostile = []string{
	"/\t/evil.example", "/\n/evil.example", "/\r\n/evil.example", "/\x00/evil.example", "/\x7f/evil.example",
	"//evil.example", "///evil.example", "/\\evil.example", "\\\\evil.example", "/\\/evil.example",
	"https://evil.example/", "http:evil.example", "javascript:alert(1)", "/%2F/evil.example", "",
}

// browserURL is where a browser goes on a redirect to p from
// https://console.example/: it strips tabs and newlines (and C0 controls
// at the ends) and reads a backslash as a slash (WHATWG URL).
func browserURL(t testing.TB, p string) *url.URL {
	p = strings.TrimFunc(p, func(r rune) bool { return r <= ' ' })
	p = strings.Map(func(r rune) rune {
		switch r {
		case '\t', '\n', '\r':
			return -1
		case '\\':
			return '/'
		}
		return r
	}, p)
	base, _ := url.Parse("https://console.example/")
	u, err := base.Parse(p)
	if err != nil {
		t.Fatalf("%q: %v", p, err)
	}
	return u
}

func TestLocalPath(t *testing.T) {
	for _, p := range hostile {
		assert.Equal(t, "/", localPath(p), "%q", p)
	}
	for _, p := range []string{"/", "/caps", "/account?id=wallet/CRED/alice", "/report?from=2026-11-20&to=2026-11-26#x"} {
		assert.Equal(t, p, localPath(p), "a path of this site stays")
	}
}

// TestNextStaysOnSite: hostile next= values, in the login page's query
// and in the login's form, and a form's back= field, all lead home.
func TestNextStaysOnSite(t *testing.T) {
	nextRE := regexp.MustCompile(`name="next" value="([^"]*)"`)
	for _, p := range hostile {
		srv, _, _ := testConsole(t) // a console each: so many logins would be throttled
		b := newBrowser(t, srv)
		_, body := b.get("/login?next=" + url.QueryEscape(p))
		m := nextRE.FindStringSubmatch(body)
		require.NotNil(t, m)
		assert.Equal(t, "/", m[1], "the login page's next for %q", p)
		code, _, loc := b.post("/login", url.Values{"user": {"ann"}, "password": {"ann-password"}, "next": {p}}, srv.URL)
		require.Equal(t, http.StatusSeeOther, code)
		assert.Equal(t, "/", loc, "after login, for %q", p)
		csrf, key := b.hidden("/")
		code, _, loc = b.confirm("/grant", url.Values{"csrf": {csrf}, "key": {key}, "back": {p}, "owner": {"alice"}, "currency": {"CRED"}, "amount": {"1"}})
		require.Equal(t, http.StatusSeeOther, code)
		assert.True(t, strings.HasPrefix(loc, "/?done="), "after a form, for %q: %s", p, loc)
	}
}

// FuzzLocalPath: whatever next= holds, a browser following the redirect
// stays on the console's host.
func FuzzLocalPath(f *testing.F) {
	for _, p := range hostile {
		f.Add(p)
	}
	f.Add("/caps?x=1")
	f.Fuzz(func(t *testing.T, p string) {
		got := localPath(p)
		if u := browserURL(t, got); u.Host != "console.example" || u.Scheme != "https" {
			t.Fatalf("localPath(%q) = %q leads to %s", p, got, u)
		}
	})
}
