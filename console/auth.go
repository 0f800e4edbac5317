package console

import (
	"bufio"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/crypto/bcrypt"

	"github.com/bourse/bourse/internal/atomicfile"
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
	h, err := hashPassword(password, 0)
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

// hashPassword is a user's new password hash, at cost (bcrypt's default
// if zero).
func hashPassword(password string, cost int) ([]byte, error) {
	if len(password) < 8 {
		return nil, errors.New("a password has at least 8 characters")
	}
	return bcrypt.GenerateFromPassword([]byte(password), max(cost, bcrypt.DefaultCost))
}

// rewriteUser writes u's line in the users file at path in place of the
// line of that name, keeping every other line as it was. The new file is
// written beside the old and renamed over it, so that a crash leaves one
// or the other.
func rewriteUser(path string, u User) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("users: %w", err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	found := false
	for i, line := range lines {
		fs := strings.Fields(line)
		if len(fs) == 3 && fs[0] == u.Name {
			lines[i] = fmt.Sprintf("%s %s %s\n", u.Name, u.Role, u.hash)
			found = true
		}
	}
	if !found {
		return fmt.Errorf("users %s: no line for %s", path, u.Name)
	}
	if err := atomicfile.Write(path, []byte(strings.Join(lines, "")), 0o600); err != nil {
		return fmt.Errorf("users: %w", err)
	}
	return nil
}
