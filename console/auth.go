package console

import (
	"bufio"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// Role is what a user may do: an admin reads and writes, a viewer reads.
type Role string

const (
	Admin  Role = "admin"
	Viewer Role = "viewer"
)

// User is one line of the users file: "name role bcrypt-hash".
type User struct {
	Name string
	Role Role
	hash []byte
}

// Users are the console's users, by name.
type Users map[string]User

// ReadUsers reads a users file: one user a line, "name role bcrypt-hash";
// blank lines and lines starting with # are skipped.
func ReadUsers(path string) (Users, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("users: %w", err)
	}
	us, err := ParseUsers(string(b))
	if err != nil {
		return nil, fmt.Errorf("users %s: %w", path, err)
	}
	return us, nil
}

// ParseUsers reads users-file lines.
func ParseUsers(text string) (Users, error) {
	us := Users{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fs := strings.Fields(line)
		if len(fs) != 3 {
			return nil, fmt.Errorf("line %d: want \"name role bcrypt-hash\"", n)
		}
		r := Role(fs[1])
		if r != Admin && r != Viewer {
			return nil, fmt.Errorf("line %d: role %q: admin or viewer", n, fs[1])
		}
		us[fs[0]] = User{Name: fs[0], Role: r, hash: []byte(fs[2])}
	}
	return us, sc.Err()
}

// UserLine is the users-file line of a new user with this password.
func UserLine(name string, role Role, password string) (string, error) {
	if name == "" || strings.ContainsAny(name, " \t\n") {
		return "", errors.New("a user name has no spaces")
	}
	if role != Admin && role != Viewer {
		return "", fmt.Errorf("role %q: admin or viewer", role)
	}
	if len(password) < 8 {
		return "", errors.New("a password has at least 8 characters")
	}
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s %s %s", name, role, h), nil
}

// check returns the user whose password this is. For a name that is no
// user's it checks against dummy, a hash of the users' own cost, to spend
// the time a real check takes, so that timing does not tell which names
// exist.
func (us Users) check(name, password string, dummy []byte) (User, bool) {
	u, ok := us[name]
	if !ok {
		_ = bcrypt.CompareHashAndPassword(dummy, []byte(password))
		return User{}, false
	}
	return u, bcrypt.CompareHashAndPassword(u.hash, []byte(password)) == nil
}

// dummyHash is a hash of nothing anyone can type, at the highest cost of
// the users' hashes.
func (us Users) dummyHash() ([]byte, error) {
	cost := bcrypt.DefaultCost
	if len(us) > 0 {
		cost = bcrypt.MinCost
	}
	for _, u := range us {
		if c, err := bcrypt.Cost(u.hash); err == nil && c > cost {
			cost = c
		}
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return bcrypt.GenerateFromPassword(b, cost)
}

// session is who is logged in, until when, and the session's CSRF token;
// it travels in a cookie signed with the console's secret.
type session struct {
	User    string
	Role    Role
	Expires time.Time
	CSRF    string
}

const sessionCookie = "bourse_session"

// sessionTTL is how long a login lasts.
const sessionTTL = 12 * time.Hour

func newSession(u User, now time.Time) session {
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	return session{User: u.Name, Role: u.Role, Expires: now.Add(sessionTTL), CSRF: base64.RawURLEncoding.EncodeToString(b)}
}

// encode is the cookie's value: the fields, then their HMAC.
func (s session) encode(secret []byte) string {
	payload := strings.Join([]string{s.User, string(s.Role), strconv.FormatInt(s.Expires.Unix(), 10), s.CSRF}, "|")
	p := base64.RawURLEncoding.EncodeToString([]byte(payload))
	return p + "." + sign(secret, p)
}

func decodeSession(secret []byte, v string, now time.Time, users Users) (session, bool) {
	p, sig, ok := strings.Cut(v, ".")
	if !ok || !hmac.Equal([]byte(sig), []byte(sign(secret, p))) {
		return session{}, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil {
		return session{}, false
	}
	fs := strings.Split(string(raw), "|")
	if len(fs) != 4 {
		return session{}, false
	}
	exp, err := strconv.ParseInt(fs[2], 10, 64)
	if err != nil || now.Unix() > exp {
		return session{}, false
	}
	// The user must still exist with that role: removing a user from the
	// file (and restarting) ends their sessions.
	if u, ok := users[fs[0]]; !ok || u.Role != Role(fs[1]) {
		return session{}, false
	}
	return session{User: fs[0], Role: Role(fs[1]), Expires: time.Unix(exp, 0), CSRF: fs[3]}, true
}

func sign(secret []byte, s string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(s))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}
