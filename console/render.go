package console

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/treasury"
)

// pageFunc fills a view for a page: its template, title and data.
type pageFunc func(r *http.Request, v *view) error

// view is what every template gets.
type view struct {
	Page, Title string
	Path        string
	// Query is the page's query, for its CSV links (csv.go): a URL's
	// part already, escaped, that the template must not escape again.
	Query template.URL
	User  string
	Admin bool
	CSRF  string
	// SessionID is the session's, to tell it among the sessions listed.
	SessionID string
	// Key is a fresh idempotency key for the page's forms (the submitted
	// one when a form comes back with an error: a retry is the same
	// action).
	Key    string
	Done   string
	Err    *formErr
	Values url.Values
	Data   any
	// Choices are what the page's forms offer (choices.go).
	Choices choices
	// Refresh is how many seconds the page waits before it reloads
	// itself (refresh.go); zero for never.
	Refresh int
}

// formErr is a refused form's error, shown beside it.
type formErr struct {
	Form, Code, Field, Message string
}

// In is the value of field name as submitted in the named form, if that
// form came back (an error), or def: what was typed in one form is not
// put in another of the page's that has a field of the same name.
func (v *view) In(form, name, def string) string {
	if v.Values != nil && v.Values.Get("form") == form && v.Values.Has(name) {
		return v.Values.Get(name)
	}
	return def
}

// ErrFor is the error of the named form, if it is the one that came back.
func (v *view) ErrFor(form string) *formErr {
	if v.Err != nil && v.Err.Form == form {
		return v.Err
	}
	return nil
}

var funcs = template.FuncMap{
	"when": func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format("2006-01-02 15:04:05")
	},
	"bar": bar,
	// dur is a reading's wall time, to the second.
	"dur":        func(d contract.Duration) string { return time.Duration(d).Round(time.Second).String() },
	"contractOf": contractOfHold,
	"indent":     func(n int) string { return strings.Repeat("\u00a0\u00a0\u00a0", n) },
	"since":      since,
	// allowancesPaid is when and where allowances are paid, in the words
	// of bourse admin allowance --help.
	"allowancesPaid": func() string { return treasury.AllowancesPaid },
}

// render runs p and its template; a form that came back (fe) shows its
// error and values.
func (c *Console) render(w http.ResponseWriter, r *http.Request, s Session, p pageFunc, fe *formState, status int) {
	v := &view{Path: r.URL.Path, Query: template.URL(r.URL.RawQuery), User: s.User, Admin: s.Role == Admin, CSRF: s.CSRF, SessionID: s.ID, Done: r.URL.Query().Get("done"), Key: newKey()}
	if fe != nil {
		v.Err, v.Values, v.Done = fe.err, fe.values, ""
		v.Path = fe.path
		if k := fe.values.Get("key"); k != "" {
			v.Key = k
		}
	}
	if err := p(r, v); err != nil {
		c.cfg.Logger.Warn("console page", "path", r.URL.Path, "err", err)
		v.Err = &formErr{Code: string(bourse.ErrorCode(err)), Message: err.Error()}
		if v.Page == "" {
			http.Error(w, err.Error(), statusOf(err))
			return
		}
		status = statusOf(err)
	}
	if fe == nil && r.Method == http.MethodGet && refreshPages[v.Page] && c.cfg.Refresh > 0 {
		every := c.cfg.Refresh
		if v.Page == "market" { // live: the exchange publishes every few seconds
			every = min(every, marketRefresh)
		}
		v.Refresh = max(1, int(every/time.Second))
	}
	if choicePages[v.Page] && (v.Admin || v.Page == "report") {
		ch, err := choicesOf(r.Context(), c.cfg.Treasury.Ledger())
		if err != nil {
			c.cfg.Logger.Warn("console choices", "path", r.URL.Path, "err", err)
			http.Error(w, "the forms' choices cannot be read now: try again", statusOf(err))
			return
		}
		v.Choices = ch
	}
	t := c.pages[v.Page]
	if t == nil {
		http.Error(w, "no page "+v.Page, http.StatusInternalServerError)
		return
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout.html", v); err != nil {
		c.cfg.Logger.Error("console template", "page", v.Page, "err", err)
		http.Error(w, "the page could not be drawn", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
}

// statusOf is the HTTP status of an error's code.
func statusOf(err error) int {
	switch bourse.ErrorCode(err) {
	case bourse.EInvalid:
		return http.StatusBadRequest
	case bourse.ENotFound, bourse.EUnknownCurrency:
		return http.StatusNotFound
	case bourse.EConflict, bourse.EIdempotencyConflict, bourse.EInsufficientFunds:
		return http.StatusConflict
	case bourse.EUnavailable:
		return http.StatusServiceUnavailable
	case bourse.EPermission:
		return http.StatusForbidden
	case bourse.ERateLimited:
		return http.StatusTooManyRequests
	}
	return http.StatusInternalServerError
}

func newKey() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "console-" + base64.RawURLEncoding.EncodeToString(b)
}

// form is one administrative action from a form: it returns what to say
// when done.
type form func(r *http.Request, actor string) (done string, err error)

// formState is a form that came back with an error.
type formState struct {
	path   string
	err    *formErr
	values url.Values
}

// submit runs a form and goes back to the page it came from: with what
// was done, or with the form's error and its values, nothing lost.
func (c *Console) submit(f form) func(http.ResponseWriter, *http.Request, Session) {
	return func(w http.ResponseWriter, r *http.Request, s Session) {
		back := localPath(r.PostForm.Get("back"))
		// One key a page, told apart by form: two forms of one page are
		// two actions, a form sent twice is one.
		values := cloneValues(r.PostForm)
		if name := r.PostForm.Get("form"); name != "" && r.PostForm.Get("key") != "" {
			r.PostForm.Set("key", r.PostForm.Get("key")+"/"+name)
		}
		done, err := f(r, s.User)
		if err == nil {
			sep := "?"
			if strings.Contains(back, "?") {
				sep = "&"
			}
			http.Redirect(w, r, back+sep+"done="+url.QueryEscape(done), http.StatusSeeOther)
			return
		}
		c.comeBack(w, r, s, values, err)
	}
}

// comeBack draws the page a form came from (its back field) with the
// form's error beside it and what was typed in it.
func (c *Console) comeBack(w http.ResponseWriter, r *http.Request, s Session, values url.Values, err error) {
	fe := formErrOf(values.Get("form"), err)
	u, _ := url.Parse(localPath(values.Get("back")))
	p := c.pageFor(u.Path)
	// The page reads its query (a report's filters, an account's id)
	// from the URL it came from.
	r.URL.Path, r.URL.RawQuery = u.Path, u.RawQuery
	c.render(w, r, s, p, &formState{path: u.Path, err: fe, values: values}, statusOf(err))
}

// formErrOf is err as the error of the named form.
func formErrOf(form string, err error) *formErr {
	fe := &formErr{Form: form, Code: string(bourse.ErrorCode(err)), Message: err.Error()}
	var be *bourse.Error
	if errors.As(err, &be) {
		fe.Field, fe.Message = be.Field, be.Message
	}
	return fe
}

func (c *Console) pageFor(path string) pageFunc {
	switch path {
	case "/account":
		return c.account
	case "/supply":
		return c.supply
	case "/allowances":
		return c.allowances
	case "/caps":
		return c.caps
	case "/rates":
		return c.rates
	case "/report":
		return c.report
	case "/audit":
		return c.audit
	case "/sessions":
		return c.sessions
	case "/contracts":
		return c.contracts
	}
	return c.overview
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}
