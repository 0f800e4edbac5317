package console

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"slices"
	"sync"
	"time"

	"github.com/bourse/bourse"
)

// Session is one login, kept on the server: the browser holds only a
// random token, whose SHA-256 is the session's ID, so that ending the
// session ends every copy of the cookie at once, and whoever reads the
// store cannot log in with what it holds.
type Session struct {
	ID   string
	User string
	Role Role
	// Stamp is a digest of the password hash the user logged in with:
	// no session outlives a change of her password.
	Stamp string
	// CSRF is the token every form of the session carries.
	CSRF             string
	Created, Expires time.Time
}

// Sessions keeps the console's sessions. MemSessions keeps them in the
// process; console/sqlsessions in the ledger's database, where several
// consoles share them and they outlive a restart.
type Sessions interface {
	// Create stores s, and may forget sessions that expired before
	// s.Created.
	Create(ctx context.Context, s Session) error
	// Session is the session of id, or an ENotFound error. It may be
	// expired: the console checks.
	Session(ctx context.Context, id string) (Session, error)
	// End ends one session, EndUser every session of user, EndAll every
	// session; ending none is no error.
	End(ctx context.Context, id string) error
	EndUser(ctx context.Context, user string) error
	EndAll(ctx context.Context) error
	// List is the sessions not expired at now, oldest first.
	List(ctx context.Context, now time.Time) ([]Session, error)
}

const sessionCookie = "bourse_session"

// sessionTTL is how long a login lasts.
const sessionTTL = 12 * time.Hour

// newSession is a session of u from now, and the token for its cookie.
func newSession(u User, now time.Time) (Session, string) {
	token := random(32)
	return Session{ID: sessionID(token), User: u.Name, Role: u.Role, Stamp: u.stamp(), CSRF: random(18),
		Created: now, Expires: now.Add(sessionTTL)}, token
}

// sessionID is the ID of the session whose cookie holds token.
func sessionID(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// stamp is a digest of the user's password hash, that changes with it.
func (u User) stamp() string {
	h := sha256.Sum256(u.hash)
	return hex.EncodeToString(h[:16])
}

func random(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// MemSessions keeps sessions in memory: they end with the process, and
// each console has its own.
type MemSessions struct {
	mu   sync.Mutex
	byID map[string]Session
}

var _ Sessions = (*MemSessions)(nil)

// NewMemSessions is an empty MemSessions.
func NewMemSessions() *MemSessions { return &MemSessions{byID: map[string]Session{}} }

func (m *MemSessions) Create(_ context.Context, s Session) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, old := range m.byID {
		if old.Expires.Before(s.Created) {
			delete(m.byID, id)
		}
	}
	if _, ok := m.byID[s.ID]; ok {
		return bourse.Errorf(bourse.EConflict, "console.Sessions.Create", "a session with this id exists")
	}
	m.byID[s.ID] = s
	return nil
}

func (m *MemSessions) Session(_ context.Context, id string) (Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.byID[id]
	if !ok {
		return Session{}, bourse.Errorf(bourse.ENotFound, "console.Sessions.Session", "no such session")
	}
	return s, nil
}

func (m *MemSessions) End(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.byID, id)
	return nil
}

func (m *MemSessions) EndUser(_ context.Context, user string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, s := range m.byID {
		if s.User == user {
			delete(m.byID, id)
		}
	}
	return nil
}

func (m *MemSessions) EndAll(context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	clear(m.byID)
	return nil
}

func (m *MemSessions) List(_ context.Context, now time.Time) ([]Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Session
	for _, s := range m.byID {
		if !s.Expires.Before(now) {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b Session) int { return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.ID, b.ID)) })
	return out, nil
}
