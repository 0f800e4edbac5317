package console

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"
)

// copyCookie is the browser's session cookie, as someone who copied it
// would hold it.
func (b *browser) copyCookie() *http.Cookie {
	b.t.Helper()
	u, _ := url.Parse(b.srv.URL)
	for _, ck := range b.c.Jar.Cookies(u) {
		if ck.Name == sessionCookie {
			return ck
		}
	}
	b.t.Fatal("no session cookie")
	return nil
}

// stolen is a browser with nothing but a copied session cookie.
func stolen(t testing.TB, b *browser) *browser {
	t.Helper()
	ck := b.copyCookie()
	thief := newBrowser(t, b.srv)
	u, _ := url.Parse(b.srv.URL)
	thief.c.Jar.SetCookies(u, []*http.Cookie{{Name: ck.Name, Value: ck.Value, Path: "/"}})
	return thief
}

// grantWith tries a grant of 5 to alice with the CSRF token csrf.
func (b *browser) grantWith(csrf, key string) int {
	b.t.Helper()
	code, _, _ := b.post("/grant", url.Values{"csrf": {csrf}, "key": {key}, "owner": {"alice"}, "currency": {"CRED"}, "amount": {"5"}}, b.srv.URL)
	return code
}

// TestLogoutEndsCopiedCookie: a cookie copied before logout is worth
// nothing after it, for reading as for granting.
func TestLogoutEndsCopiedCookie(t *testing.T) {
	srv, tr, _ := testConsole(t)
	b := newBrowser(t, srv)
	b.login("ann")
	csrf, key := b.hidden("/")
	thief := stolen(t, b)
	code, _ := thief.get("/")
	require.Equal(t, http.StatusOK, code, "the copy works while the session lives")

	code, _, loc := b.post("/logout", url.Values{"csrf": {csrf}}, srv.URL)
	require.Equal(t, http.StatusSeeOther, code)
	require.Equal(t, "/login", loc)

	code, _ = thief.get("/")
	assert.Equal(t, http.StatusSeeOther, code, "the copied cookie is sent to log in")
	assert.Equal(t, http.StatusUnauthorized, thief.grantWith(csrf, key), "and cannot grant")
	bal, err := tr.Ledger().Balance(context.Background(), "wallet/CRED/alice")
	require.NoError(t, err)
	assert.True(t, bal.Available.IsZero(), "nothing moved: %s", bal.Available)
}

// TestPasswordChangeEndsSessions: ann changes her password in one
// browser; her session in another and a copy of the first's old cookie
// end at once, the users file holds the new hash, and the browser that
// changed it stays logged in.
func TestPasswordChangeEndsSessions(t *testing.T) {
	cfg, _, _ := testConfig(t)
	cfg.UsersFile = filepath.Join(t.TempDir(), "users")
	var file string
	for _, name := range []string{"ann", "vic"} {
		u := cfg.Users[name]
		file += name + " " + string(u.Role) + " " + string(u.hash) + "\n"
	}
	require.NoError(t, os.WriteFile(cfg.UsersFile, []byte("# the console's users\n"+file), 0o600))
	srv, _ := serve(t, cfg)

	here, there := newBrowser(t, srv), newBrowser(t, srv)
	here.login("ann")
	there.login("ann")
	thief := stolen(t, here)
	csrf, _ := here.hidden("/sessions")

	code, body, _ := here.post("/password", url.Values{"csrf": {csrf}, "current": {"wrong-password"}, "new": {"ann-new-password"}, "again": {"ann-new-password"}}, srv.URL)
	assert.Equal(t, http.StatusForbidden, code)
	assert.Contains(t, body, "that is not your password")
	code, body, _ = here.post("/password", url.Values{"csrf": {csrf}, "current": {"ann-password"}, "new": {"ann-new-password"}, "again": {"ann-new-pass"}}, srv.URL)
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, body, "differ")
	code, _, loc := here.post("/password", url.Values{"csrf": {csrf}, "current": {"ann-password"}, "new": {"ann-new-password"}, "again": {"ann-new-password"}}, srv.URL)
	require.Equal(t, http.StatusSeeOther, code)
	assert.Contains(t, loc, "/sessions?done=password+changed")

	code, _ = there.get("/")
	assert.Equal(t, http.StatusSeeOther, code, "her other session ended")
	code, _ = thief.get("/")
	assert.Equal(t, http.StatusSeeOther, code, "the copied cookie ended")
	code, _ = here.get("/")
	assert.Equal(t, http.StatusOK, code, "the browser that changed it has a new session")

	us, err := ReadUsers(cfg.UsersFile)
	require.NoError(t, err)
	assert.NoError(t, bcrypt.CompareHashAndPassword(us["ann"].hash, []byte("ann-new-password")), "the file holds the new hash")
	assert.Equal(t, cfg.Users["vic"].hash, us["vic"].hash, "and vic's line as it was")
	written, err := os.ReadFile(cfg.UsersFile)
	require.NoError(t, err)
	assert.Contains(t, string(written), "# the console's users\n")

	code, _, _ = there.post("/login", url.Values{"user": {"ann"}, "password": {"ann-password"}}, srv.URL)
	assert.Equal(t, http.StatusUnauthorized, code, "the old password is refused")
	code, _, _ = there.post("/login", url.Values{"user": {"ann"}, "password": {"ann-new-password"}}, srv.URL)
	assert.Equal(t, http.StatusSeeOther, code)
}

// TestUsersFileChangeEndsSessions: a password or role changed in the
// users file (and the file read again, by a restart or SIGHUP) ends the
// sessions made under the old one, though the store still holds them.
func TestUsersFileChangeEndsSessions(t *testing.T) {
	cfg, _, _ := testConfig(t)
	cfg.Sessions = NewMemSessions()
	srv, c := serve(t, cfg)
	ann, vic := newBrowser(t, srv), newBrowser(t, srv)
	ann.login("ann")
	vic.login("vic")

	us := testUsers(t) // the same names and roles, new hashes
	vicAdmin := us["vic"]
	vicAdmin.hash = cfg.Users["vic"].hash
	vicAdmin.Role = Admin
	us["vic"] = vicAdmin
	require.NoError(t, c.SetUsers(us)) // the file read again

	code, _ := ann.get("/")
	assert.Equal(t, http.StatusSeeOther, code, "ann's password changed")
	code, _ = vic.get("/")
	assert.Equal(t, http.StatusSeeOther, code, "vic's role changed")
	ss, err := cfg.Sessions.List(context.Background(), time.Now())
	require.NoError(t, err)
	assert.Len(t, ss, 2, "the store still holds both")
}

// TestEndAllSessions: an administrator ends every session, hers and a
// viewer's and the copies of their cookies; a viewer may not.
func TestEndAllSessions(t *testing.T) {
	srv, _, _ := testConsole(t)
	ann, vic := newBrowser(t, srv), newBrowser(t, srv)
	ann.login("ann")
	vic.login("vic")
	thief := stolen(t, vic)

	csrf, _ := vic.hidden("/sessions")
	code, _, _ := vic.post("/sessions/end", url.Values{"csrf": {csrf}}, srv.URL)
	assert.Equal(t, http.StatusForbidden, code, "a viewer cannot end sessions")
	_, body := ann.get("/sessions")
	assert.Contains(t, body, `id="end-all-form"`)
	assert.Equal(t, 2, strings.Count(body, `<td class="user">`), "ann's session and vic's")

	csrf, _ = ann.hidden("/sessions")
	code, _, loc := ann.post("/sessions/end", url.Values{"csrf": {csrf}}, srv.URL)
	require.Equal(t, http.StatusSeeOther, code)
	assert.Equal(t, "/login", loc)
	for who, b := range map[string]*browser{"ann": ann, "vic": vic, "the copy of vic's cookie": thief} {
		code, _ := b.get("/")
		assert.Equal(t, http.StatusSeeOther, code, "%s is logged out", who)
	}
}

// TestPasswordGuessesThrottled: whoever holds a copied cookie cannot
// guess the current password fast on the password form (the guesses are
// throttled per session), and those guesses do not stop the user
// changing it from another session of hers.
func TestPasswordGuessesThrottled(t *testing.T) {
	srv, _, _ := testConsole(t)
	ann, laptop := newBrowser(t, srv), newBrowser(t, srv)
	ann.login("ann")
	laptop.login("ann")
	thief := stolen(t, laptop)
	csrf, _ := thief.hidden("/sessions")
	var codes []int
	for range 6 {
		code, _, _ := thief.post("/password", url.Values{"csrf": {csrf}, "current": {"guess-guess"}, "new": {"x-password"}, "again": {"x-password"}}, srv.URL)
		codes = append(codes, code)
	}
	assert.Equal(t, []int{403, 403, 403, 403, 403, 429}, codes, "five at once, then one every 12 s")
	csrf, _ = ann.hidden("/sessions")
	code, _, _ := ann.post("/password", url.Values{"csrf": {csrf}, "current": {"ann-password"}, "new": {"ann-new-password"}, "again": {"ann-new-password"}}, srv.URL)
	assert.Equal(t, http.StatusSeeOther, code, "ann, from her own session, changes it")
}
