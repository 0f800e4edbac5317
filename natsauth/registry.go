package natsauth

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/jwt/v2"

	"github.com/bourse/bourse/internal/atomicfile"
	"github.com/bourse/bourse/protocol"
)

// Registry is the file in a market's folder that lists every user key its
// account has signed: an id is one party's, in one role, for the life of
// the operator, whether or not its credentials file is still in the folder
// (a client issued under a server's id would read that server's
// deliveries: other clients' offers and job arguments).
const Registry = "issued"

// Issued is one user key the account signed.
type Issued struct {
	ID, Role string
	Key      string // the user's public key
	At       time.Time
	// Expires is when the credentials stop working; zero for never.
	Expires time.Time
	// Revoked is when the account revoked the key; zero if it has not.
	Revoked time.Time
}

// RotateWithin is how long before it expires a credential is due to be
// rotated: a month leaves its holder time to take the new one in.
const RotateWithin = 30 * 24 * time.Hour

// RotateSoon says whether e is live at now and expires within
// RotateWithin: the list of credentials tells its administrator to
// rotate it.
func (e Issued) RotateSoon(now time.Time) bool {
	return e.Revoked.IsZero() && !e.Expires.IsZero() && now.Before(e.Expires) && e.Expires.Sub(now) < RotateWithin
}

// registry is the Registry file's lines.
type registry struct {
	path    string
	entries []Issued
}

const registryHead = `# Every user key this market's account has signed (bourse admin nats-auth):
# an id is one party's, in one role, for the life of the operator.
# id role user-key issued expires revoked ("-": never)
`

// loadRegistry reads dir's registry. A folder made before the registry
// existed gets one from its credentials files and server-keys: the ids
// whose files were removed since cannot be known, so it says so.
func loadRegistry(dir string) (*registry, error) {
	r := &registry{path: filepath.Join(dir, Registry)}
	f, err := os.Open(r.path)
	if errors.Is(err, os.ErrNotExist) {
		if err := r.seed(dir); err != nil {
			return nil, err
		}
		return r, r.save()
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		e, err := parseIssued(line)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", r.path, n, err)
		}
		r.entries = append(r.entries, e)
	}
	return r, sc.Err()
}

func parseIssued(line string) (Issued, error) {
	fs := strings.Fields(line)
	if len(fs) != 6 {
		return Issued{}, fmt.Errorf("want id role user-key issued expires revoked, got %q", line)
	}
	e := Issued{ID: fs[0], Role: fs[1], Key: fs[2]}
	for i, t := range []*time.Time{&e.At, &e.Expires, &e.Revoked} {
		if fs[3+i] == "-" {
			continue
		}
		v, err := time.Parse(time.RFC3339, fs[3+i])
		if err != nil {
			return Issued{}, fmt.Errorf("%s: %w", fs[0], err)
		}
		*t = v
	}
	return e, nil
}

func (e Issued) line() string {
	t := func(v time.Time) string {
		if v.IsZero() {
			return "-"
		}
		return v.UTC().Format(time.RFC3339)
	}
	return strings.Join([]string{e.ID, e.Role, e.Key, t(e.At), t(e.Expires), t(e.Revoked)}, " ")
}

// seed lists the users of a folder made before the registry: from its
// credentials files, and the servers of its server-keys.
func (r *registry) seed(dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.creds"))
	if err != nil {
		return err
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		token, err := jwt.ParseDecoratedJWT(data)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		uc, err := jwt.DecodeUserClaims(token)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		r.entries = append(r.entries, Issued{ID: uc.Name, Role: roleOf(uc), Key: uc.Subject, At: time.Unix(uc.IssuedAt, 0), Expires: unixOrZero(uc.Expires)})
	}
	keys, err := os.ReadFile(filepath.Join(dir, ServerKeys))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for _, line := range strings.Split(string(keys), "\n") {
		fs := strings.Fields(line)
		if len(fs) == 2 && !strings.HasPrefix(fs[0], "#") && len(r.issued(fs[0])) == 0 {
			r.entries = append(r.entries, Issued{ID: fs[0], Role: RoleServer, Key: fs[1]})
		}
	}
	return nil
}

// roleOf reads a user's role from the permissions permit gave it.
func roleOf(uc *jwt.UserClaims) string {
	if slices.Contains(uc.Pub.Deny, ">") {
		return RoleViewer
	}
	for _, s := range uc.Pub.Allow {
		for _, role := range []string{RoleClient, RoleServer} {
			if strings.HasPrefix(s, protocol.Prefix+"."+role+".") {
				return role
			}
		}
	}
	return RoleExchange
}

func unixOrZero(s int64) time.Time {
	if s == 0 {
		return time.Time{}
	}
	return time.Unix(s, 0)
}

// issued is every key issued to id, oldest first.
func (r *registry) issued(id string) []Issued {
	var out []Issued
	for _, e := range r.entries {
		if e.ID == id {
			out = append(out, e)
		}
	}
	return out
}

// live is id's keys that are not revoked.
func (r *registry) live(id string) []Issued {
	var out []Issued
	for _, e := range r.issued(id) {
		if e.Revoked.IsZero() {
			out = append(out, e)
		}
	}
	return out
}

// revoke revokes id's live keys at at: in the account, signed again
// (updateAccount), then in the registry, which the caller saves.
func (r *registry) revoke(dir, id string, at time.Time) error {
	live := r.live(id)
	if len(live) == 0 {
		return nil
	}
	err := updateAccount(dir, func(ac *jwt.AccountClaims) {
		for _, e := range live {
			ac.RevokeAt(e.Key, at)
		}
	})
	if err != nil {
		return fmt.Errorf("revoke %s: %w", id, err)
	}
	for i, e := range r.entries {
		if e.ID == id && e.Revoked.IsZero() {
			r.entries[i].Revoked = at.Truncate(time.Second)
		}
	}
	return nil
}

// claim checks that id may be issued in role for the first time.
func (r *registry) claim(role, id string) error {
	es := r.issued(id)
	if len(es) == 0 {
		return nil
	}
	if es[0].Role != role {
		return fmt.Errorf("%q was issued to the %s %s %s: an id is one party's, in one role, for the life of the operator (choose another id)",
			id, es[0].Role, id, es[0].when())
	}
	return fmt.Errorf("%s %q was issued already %s: bourse admin nats-auth rotate replaces its key", role, id, es[0].when())
}

// when says when e was issued, for a person.
func (e Issued) when() string {
	if e.At.IsZero() {
		return "before the registry was kept"
	}
	return "on " + e.At.UTC().Format(time.DateOnly)
}

// save writes the registry beside the old and renames it over.
func (r *registry) save() error {
	var b strings.Builder
	b.WriteString(registryHead)
	for _, e := range r.entries {
		b.WriteString(e.line())
		b.WriteByte('\n')
	}
	return atomicfile.Write(r.path, []byte(b.String()), 0o644)
}

// lock holds dir's lock until unlock, so that two commands at once do not
// both issue an id, or lose each other's revocations.
func lock(dir string) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}
