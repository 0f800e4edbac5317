// Package console is the administrators' web console: balances rolled up
// by organisation and project, the money supply, allowances, caps, rates,
// prices, cost reports, the audit trail and the live market data, with
// forms for the administrative actions. It only calls the treasury (and
// reads contracts for reports, and the market data it is fed): every
// write is the same idempotent, audited action as on the command line,
// recorded under the logged-in user.
//
// Pages are html/template with embedded templates and CSS, charts are SVG
// drawn on the server, nothing is fetched from elsewhere: it works
// offline. Users log in with a password (bcrypt, a users file); sessions
// are kept on the server (Sessions), the cookie holding only a random
// token (HttpOnly, SameSite=Strict, Secure behind TLS), so that logout, a
// change of password or an administrator's "end all sessions" ends a
// session at once, wherever its cookie was copied; every form carries the
// session's CSRF token, and a POST from another origin is refused.
// Viewers see no administrative forms and get 403 on any POST but their
// own logout and password.
package console

import (
	"crypto/rand"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/bourse/bourse/treasury"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var staticFiles embed.FS

// Config configures a console. Treasury and Users are required.
type Config struct {
	Treasury *treasury.Treasury
	// Contracts, if set, feeds the cost report and the contracts' pages
	// (the exchange's store).
	Contracts Contracts
	Users     Users
	// UsersFile, if set, is the file Users were read from: a user's change
	// of her password is written there. Without it the change lasts as
	// long as the process.
	UsersFile string
	// Sessions keeps the sessions; in memory if nil (they then end with
	// the process, and each console has its own).
	Sessions Sessions
	// Secret signs device cookies (the login throttle's); a random one if
	// empty (browsers are then strangers again after a restart).
	Secret []byte
	// Secure marks cookies Secure and asks browsers for HTTPS only
	// (Strict-Transport-Security): set it when the console is served over
	// TLS, directly or behind a proxy.
	Secure bool
	// TrustedProxies, if set, are the addresses of the proxies the console
	// is served behind: only they may reach it (a request from elsewhere
	// went around the proxy and its TLS, and is refused), and the client's
	// address, which the login throttle keys on, is read from their
	// X-Forwarded-For. Without them X-Forwarded-For is ignored.
	TrustedProxies []netip.Prefix
	// Market, if set, is the market data the Market page shows, fed by
	// whoever runs the console (market.go); without it the page says
	// there is none.
	Market *MarketHistory
	// Refresh is how often lists reload themselves in the browser: 30
	// seconds if zero, never if negative.
	Refresh time.Duration
	Logger  *slog.Logger
	Now     func() time.Time
}

// Console serves the pages. Build it with New.
type Console struct {
	cfg      Config
	pages    map[string]*template.Template
	mux      *http.ServeMux
	throttle throttle
	users    atomic.Pointer[userTable]
}

// userTable is the users the console knows now, and the hash a name that
// is none of theirs is checked against.
type userTable struct {
	users Users
	dummy []byte
}

// New checks cfg and parses the templates.
func New(cfg Config) (*Console, error) {
	if cfg.Treasury == nil || len(cfg.Users) == 0 {
		return nil, errors.New("console: a treasury and at least one user are required")
	}
	if len(cfg.Secret) == 0 {
		cfg.Secret = make([]byte, 32)
		_, _ = rand.Read(cfg.Secret)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Sessions == nil {
		cfg.Sessions = NewMemSessions()
	}
	if cfg.Refresh == 0 {
		cfg.Refresh = 30 * time.Second
	}
	c := &Console{cfg: cfg, pages: map[string]*template.Template{}, mux: http.NewServeMux()}
	c.throttle.clock = cfg.Now
	if err := c.SetUsers(cfg.Users); err != nil {
		return nil, err
	}
	names, err := fs.Glob(templateFiles, "templates/*.html")
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		if n == "templates/layout.html" {
			continue
		}
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFiles, "templates/layout.html", n)
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", n, err)
		}
		c.pages[n[len("templates/"):len(n)-len(".html")]] = t
	}
	c.routes()
	return c, nil
}

// ServeHTTP serves the console with its security headers and access log.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := c.cfg.Now()
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
	if c.cfg.Secure {
		h.Set("Strict-Transport-Security", "max-age=31536000")
	}
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	if len(c.cfg.TrustedProxies) > 0 && !c.trusted(peerAddr(r)) {
		c.cfg.Logger.Warn("console request around the proxy refused", "remote", r.RemoteAddr, "path", r.URL.Path)
		http.Error(rec, "this console is served through its proxy only", http.StatusForbidden)
	} else {
		c.mux.ServeHTTP(rec, r)
	}
	c.cfg.Logger.Info("console", "method", r.Method, "path", r.URL.Path, "status", rec.status, "remote", c.clientAddr(r), "took", c.cfg.Now().Sub(start).Round(time.Microsecond))
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) { s.status = code; s.ResponseWriter.WriteHeader(code) }

func (c *Console) routes() {
	static, _ := fs.Sub(staticFiles, "static")
	c.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	c.mux.HandleFunc("GET /login", c.loginPage)
	c.mux.HandleFunc("POST /login", c.login)
	c.mux.HandleFunc("POST /logout", c.write(c.logout))
	c.mux.HandleFunc("POST /password", c.write(c.changePassword))
	c.mux.HandleFunc("POST /sessions/end", c.write(c.endAll))
	c.mux.HandleFunc("GET /csv/{table}", c.exportCSV)
	for path, p := range map[string]pageFunc{
		"/{$}": c.overview, "/account": c.account, "/supply": c.supply, "/allowances": c.allowances,
		"/caps": c.caps, "/rates": c.rates, "/report": c.report, "/audit": c.audit, "/sessions": c.sessions,
		"/contracts": c.contracts, "/contract": c.contractPage, "/market": c.market,
	} {
		c.mux.HandleFunc("GET "+path, c.read(p))
	}
	for path, f := range map[string]form{
		"/open": c.open, "/allowance": c.setAllowance,
		"/allowance/remove": c.removeAllowance, "/cap": c.setCap, "/spend-cap": c.setSpendCap,
		"/rate": c.setRate, "/exchange": c.exchange, "/spend-rate": c.setSpendRate,
		"/price": c.setPrice, "/sell": c.sell,
	} {
		c.mux.HandleFunc("POST "+path, c.write(c.submit(f)))
	}
	// Minting and destroying money are confirmed first (confirm.go).
	c.mux.HandleFunc("POST /grant", c.write(c.confirmed(c.previewGrant, c.grant)))
	c.mux.HandleFunc("POST /burn", c.write(c.confirmed(c.previewBurn, c.burn)))
}

// SetUsers replaces the console's users (after the users file changed):
// the sessions of a user removed, or whose role or password changed, end.
func (c *Console) SetUsers(us Users) error {
	if len(us) == 0 {
		return errors.New("console: at least one user is required")
	}
	dummy, err := us.dummyHash()
	if err != nil {
		return fmt.Errorf("console: %w", err)
	}
	c.users.Store(&userTable{users: us, dummy: dummy})
	return nil
}

// read serves a page to anyone logged in.
func (c *Console) read(p pageFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, ok := c.sessionOr(w, r)
		if !ok {
			return
		}
		c.render(w, r, s, p, nil, http.StatusOK)
	}
}

// sessionOr is the request's session; without one it answers the
// request itself (a page sends the browser to log in) and returns false.
func (c *Console) sessionOr(w http.ResponseWriter, r *http.Request) (Session, bool) {
	s, err := c.sessionOf(r)
	switch {
	case err == nil:
		return s, true
	case !errors.Is(err, errNoSession):
		c.cfg.Logger.Error("console sessions", "err", err)
		http.Error(w, "sessions cannot be read now: try again", http.StatusServiceUnavailable)
	case r.Method == http.MethodGet:
		http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
	default:
		http.Error(w, "log in first", http.StatusUnauthorized)
	}
	return Session{}, false
}

// write guards a POST: a session, an admin, the session's CSRF token,
// and the request's own origin.
func (c *Console) write(h func(http.ResponseWriter, *http.Request, Session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, ok := c.sessionOr(w, r)
		if !ok {
			return
		}
		if !sameOrigin(r) {
			http.Error(w, "a form from another site is refused", http.StatusForbidden)
			return
		}
		if err := r.ParseForm(); err != nil {
			http.Error(w, "a form that cannot be read: "+err.Error(), http.StatusBadRequest)
			return
		}
		if r.PostForm.Get("csrf") != s.CSRF {
			http.Error(w, "the form's CSRF token is missing or stale: reload the page", http.StatusForbidden)
			return
		}
		if s.Role != Admin && !forEveryone[r.URL.Path] {
			http.Error(w, s.User+" is a viewer: viewers cannot change anything", http.StatusForbidden)
			return
		}
		h(w, r, s)
	}
}

// sameOrigin accepts a request whose Origin (or, without one, Referer)
// is this host, or that has neither (not a browser's cross-site form).
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		o = r.Header.Get("Referer")
	}
	if o == "" || o == "null" && r.Header.Get("Sec-Fetch-Site") == "same-origin" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}
