package console

import (
	"maps"
	"net/http"
	"net/url"

	"golang.org/x/crypto/bcrypt"

	"github.com/bourse/bourse"
)

// forEveryone are the POSTs a viewer may make too: they change nothing
// but her own login.
var forEveryone = map[string]bool{"/logout": true, "/password": true}

type sessionsView struct {
	Sessions []Session
	Mine     string
}

// sessions is the page of live sessions, with the forms to change one's
// password and, for an administrator, to end every session.
func (c *Console) sessions(r *http.Request, v *view) error {
	v.Page, v.Title = "sessions", "Sessions"
	ss, err := c.cfg.Sessions.List(r.Context(), c.cfg.Now())
	if err != nil {
		return err
	}
	v.Data = sessionsView{Sessions: ss, Mine: v.SessionID}
	return nil
}

// changePassword sets the user's new password, in the users file when
// the console has one, and ends every session of hers: a cookie copied
// before is worth nothing from now on. The browser that changed it gets
// a new session.
func (c *Console) changePassword(w http.ResponseWriter, r *http.Request, s Session) {
	const op = "console.changePassword"
	fail := func(err error) {
		c.cfg.Logger.Warn("console password change refused", "user", s.User, "remote", c.clientAddr(r), "err", err)
		r.URL.Path, r.URL.RawQuery = "/sessions", ""
		c.render(w, r, s, c.sessions, &formState{path: "/sessions", err: formErrOf("password", err), values: url.Values{}}, statusOf(err))
	}
	// Knowing the current password is what a copied cookie lacks: its
	// holder's guesses at it are throttled, per session, so that they
	// cannot lock the user's own sessions out of changing it.
	if !c.throttle.allow(throttleKey{key: "password:" + s.ID}) {
		fail(&bourse.Error{Code: bourse.ERateLimited, Op: op, Field: "current", Message: "too many tries: wait a few seconds", RetryAfterMS: throttleEvery.Milliseconds()})
		return
	}
	ut := c.users.Load()
	u, ok := ut.users.check(s.User, r.PostForm.Get("current"), ut.dummy)
	if !ok {
		fail(&bourse.Error{Code: bourse.EPermission, Op: op, Field: "current", Message: "that is not your password"})
		return
	}
	if r.PostForm.Get("new") != r.PostForm.Get("again") {
		fail(&bourse.Error{Code: bourse.EInvalid, Op: op, Field: "again", Message: "the new password and its repetition differ"})
		return
	}
	cost, _ := bcrypt.Cost(u.hash)
	h, err := hashPassword(r.PostForm.Get("new"), cost)
	if err != nil {
		fail(&bourse.Error{Code: bourse.EInvalid, Op: op, Field: "new", Message: err.Error()})
		return
	}
	u.hash = h
	if c.cfg.UsersFile != "" {
		if err := rewriteUser(c.cfg.UsersFile, u); err != nil {
			fail(&bourse.Error{Code: bourse.EInternal, Op: op, Message: "the users file could not be written", Err: err})
			return
		}
	}
	us := maps.Clone(c.users.Load().users)
	us[u.Name] = u
	if err := c.SetUsers(us); err != nil {
		fail(err)
		return
	}
	// The stamp already refuses her old sessions here; ending them in
	// the store ends them in every console that shares it.
	if err := c.cfg.Sessions.EndUser(r.Context(), u.Name); err != nil {
		fail(&bourse.Error{Code: bourse.EUnavailable, Op: op, Message: "the password changed but her sessions could not be ended: end all sessions", Err: err})
		return
	}
	c.cfg.Logger.Info("console password changed", "user", u.Name, "remote", c.clientAddr(r))
	if err := c.startSession(w, r, u); err != nil {
		c.dropCookie(w)
		http.Redirect(w, r, "/login", http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, "/sessions?done="+url.QueryEscape("password changed: every other session of yours has ended"), http.StatusSeeOther)
}

// endAll ends every session, the administrator's own included.
func (c *Console) endAll(w http.ResponseWriter, r *http.Request, s Session) {
	if err := c.cfg.Sessions.EndAll(r.Context()); err != nil {
		c.cfg.Logger.Error("console end all sessions", "user", s.User, "err", err)
		http.Error(w, "the sessions could not be ended: try again", http.StatusServiceUnavailable)
		return
	}
	c.cfg.Logger.Warn("console sessions all ended", "by", s.User, "remote", c.clientAddr(r))
	c.dropCookie(w)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}
