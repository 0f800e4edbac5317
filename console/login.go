package console

import (
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/bourse/bourse"
)

var loginTemplate = template.Must(template.New("login").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Bourse console — log in</title>
<link rel="stylesheet" href="/static/style.css"></head>
<body class="login"><main>
<h1>Bourse console</h1>
{{if .Error}}<p class="error" role="alert">{{.Error}}</p>{{end}}
<form method="post" action="/login">
<input type="hidden" name="next" value="{{.Next}}">
<label>User <input name="user" id="user" autocomplete="username" required autofocus></label>
<label>Password <input name="password" id="password" type="password" autocomplete="current-password" required></label>
<button type="submit" id="login">Log in</button>
</form></main></body></html>`))

type loginView struct{ Error, Next string }

func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = loginTemplate.Execute(w, loginView{Next: localPath(r.URL.Query().Get("next"))})
}

func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		http.Error(w, "a form from another site is refused", http.StatusForbidden)
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	name := r.PostForm.Get("user")
	device, trusted := c.deviceOf(r, name)
	if !c.throttle.allow(c.loginKeys(r, name, device, trusted)...) {
		c.cfg.Logger.Warn("console login throttled", "user", name, "remote", c.clientAddr(r), "device", trusted)
		w.Header().Set("Retry-After", "12")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusTooManyRequests)
		_ = loginTemplate.Execute(w, loginView{Error: "too many logins: try again in a few seconds", Next: localPath(r.PostForm.Get("next"))})
		return
	}
	ut := c.users.Load()
	u, ok := ut.users.check(name, r.PostForm.Get("password"), ut.dummy)
	if !ok {
		c.cfg.Logger.Warn("console login refused", "user", name, "remote", c.clientAddr(r), "device", trusted)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusUnauthorized)
		_ = loginTemplate.Execute(w, loginView{Error: "wrong user or password", Next: localPath(r.PostForm.Get("next"))})
		return
	}
	if err := c.startSession(w, r, u); err != nil {
		c.cfg.Logger.Error("console login", "user", u.Name, "err", err)
		http.Error(w, "the session could not be kept: try again", http.StatusServiceUnavailable)
		return
	}
	if !trusted {
		c.setDevice(w, u.Name)
	}
	c.cfg.Logger.Info("console login", "user", u.Name, "role", u.Role)
	http.Redirect(w, r, localPath(r.PostForm.Get("next")), http.StatusSeeOther)
}

// logout ends the session on the server, so that a copy of its cookie
// is worth nothing from now on.
func (c *Console) logout(w http.ResponseWriter, r *http.Request, s Session) {
	if err := c.cfg.Sessions.End(r.Context(), s.ID); err != nil {
		c.cfg.Logger.Error("console logout", "user", s.User, "err", err)
		http.Error(w, "the session could not be ended: try again", http.StatusServiceUnavailable)
		return
	}
	c.cfg.Logger.Info("console logout", "user", s.User)
	c.dropCookie(w)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// startSession keeps a new session of u and gives the browser its cookie.
func (c *Console) startSession(w http.ResponseWriter, r *http.Request, u User) error {
	s, token := newSession(u, c.cfg.Now())
	if err := c.cfg.Sessions.Create(r.Context(), s); err != nil {
		return err
	}
	// Max-Age, not Expires: the browser counts it from now on its own
	// clock, so that a browser (or a test) whose clock differs from the
	// console's keeps the cookie as long as the console keeps the
	// session; the console judges the expiry on its own clock.
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: token, Path: "/", MaxAge: maxAge(s.Expires.Sub(s.Created)),
		HttpOnly: true, Secure: c.cfg.Secure, SameSite: http.SameSiteStrictMode})
	return nil
}

// maxAge is d as a cookie's Max-Age: whole seconds, at least one (0
// would mean "no Max-Age" to net/http).
func maxAge(d time.Duration) int { return max(1, int(d/time.Second)) }

func (c *Console) dropCookie(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: c.cfg.Secure, SameSite: http.SameSiteStrictMode})
}

// errNoSession is why a request has no session: no cookie, or one of a
// session that ended, expired, or whose user changed.
var errNoSession = errors.New("no session")

// sessionOf is the request's session, if it is live: kept on the server,
// not expired, and of a user who is still there with the same role and
// password.
func (c *Console) sessionOf(r *http.Request) (Session, error) {
	ck, err := r.Cookie(sessionCookie)
	if err != nil {
		return Session{}, errNoSession
	}
	s, err := c.cfg.Sessions.Session(r.Context(), sessionID(ck.Value))
	switch {
	case bourse.ErrorCode(err) == bourse.ENotFound:
		return Session{}, errNoSession
	case err != nil:
		return Session{}, fmt.Errorf("console session: %w", err)
	case c.cfg.Now().After(s.Expires):
		return Session{}, errNoSession
	}
	if u, ok := c.users.Load().users[s.User]; !ok || u.Role != s.Role || u.stamp() != s.Stamp {
		return Session{}, errNoSession
	}
	return s, nil
}

// loginKeys are the throttle's buckets a login draws on: its device's
// alone if it comes from a browser that has logged in as name before,
// else its address's and the name's.
func (c *Console) loginKeys(r *http.Request, name, device string, trusted bool) []throttleKey {
	if trusted {
		return []throttleKey{{key: "device:" + device}}
	}
	_, known := c.users.Load().users[name]
	return []throttleKey{{key: "addr:" + c.clientAddr(r)}, {key: "user:" + name, user: known}}
}

// localPath keeps a redirect on this site: p if it is a path of this
// host, else "/". Browsers strip tabs and newlines out of a URL and read a
// backslash as a slash, so that "/\t/evil.example" and "/\\evil.example"
// lead to another host: any control character or backslash is refused,
// and so is anything that parses with a scheme, a host or a user, or
// whose path starts with two slashes once decoded.
func localPath(p string) string {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") ||
		strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' }) {
		return "/"
	}
	u, err := url.Parse(p)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" || strings.HasPrefix(u.Path, "//") {
		return "/"
	}
	return p
}
