package process

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/bourse/bourse"
)

// jobUser is a Unix user that jobs run as.
type jobUser struct {
	name   string
	uid    int
	gid    int
	groups []uint32 // its groups in the group database, as a login gets them
}

// users is the pool of Config.Users. A user runs one job at a time, and is
// given to another only once no process of it is left.
type users struct {
	log *slog.Logger

	mu   sync.Mutex
	all  []*jobUser
	busy map[int]bool // by uid
	// kept are the users kept from every later job for what a job left
	// that the agent could not remove (clean), by uid: what is left.
	kept map[int][]string
}

// needCaps are the capabilities an agent needs to run jobs as other
// users: switch to them (setuid, setgid), stop them (kill), give them
// their folders and take them back (chown, fowner), and clean up what
// they leave (dac_override).
var needCaps = []struct {
	bit  uint
	name string
}{{0, "CAP_CHOWN"}, {1, "CAP_DAC_OVERRIDE"}, {3, "CAP_FOWNER"}, {5, "CAP_KILL"}, {6, "CAP_SETGID"}, {7, "CAP_SETUID"}}

// checkSwitchUsers refuses job users to an agent that cannot switch to
// them, saying why.
func checkSwitchUsers() error {
	if err := canSwitchUsers(); err != nil {
		return &bourse.Error{Code: bourse.EPermission, Op: "process.New", Field: "users",
			Message: "jobs run as the configured job users, which needs the agent to run as root: " + err.Error()}
	}
	return nil
}

// canSwitchUsers says why this process cannot run jobs as other users, or
// nil where it can: as root, or with the capabilities needCaps names.
func canSwitchUsers() error {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		if os.Geteuid() == 0 {
			return nil
		}
		return fmt.Errorf("it runs as uid %d, not root", os.Geteuid())
	}
	var eff uint64
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			eff, _ = strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	var missing []string
	for _, c := range needCaps {
		if eff&(1<<c.bit) == 0 {
			missing = append(missing, c.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("it runs as uid %d without %s (run it as root, or give it %s)",
			os.Geteuid(), strings.Join(missing, ", "), capNames())
	}
	return nil
}

func capNames() string {
	var names []string
	for _, c := range needCaps {
		names = append(names, c.name)
	}
	return strings.Join(names, ", ")
}

// openUsers resolves the pool's names. A user may not be root, the
// agent's own, nor in the agent's group or root's (the agent's files are
// readable by its group); no two may share a uid. Processes a user still
// runs are jobs an earlier agent left: they are killed.
func openUsers(names []string, log *slog.Logger) (*users, error) {
	const op = "process.New"
	bad := func(msg string, args ...any) error {
		return &bourse.Error{Code: bourse.EInvalid, Op: op, Field: "users", Message: fmt.Sprintf(msg, args...)}
	}
	if err := checkSchedulers(names); err != nil {
		return nil, err
	}
	p := &users{log: log, busy: map[int]bool{}, kept: map[int][]string{}}
	seen := map[int]string{}
	for _, name := range names {
		u, err := user.Lookup(name)
		if err != nil {
			return nil, bad("%s: %v", name, err)
		}
		uid, err1 := strconv.Atoi(u.Uid)
		gid, err2 := strconv.Atoi(u.Gid)
		if err := errors.Join(err1, err2); err != nil {
			return nil, bad("%s: %v", name, err)
		}
		switch {
		case uid == 0 || gid == 0:
			return nil, bad("%s is root, or in root's group", name)
		case uid == os.Getuid() || uid == os.Geteuid():
			return nil, bad("%s is the agent's own user", name)
		case seen[uid] != "":
			return nil, bad("%s and %s are one user (uid %d)", seen[uid], name, uid)
		}
		seen[uid] = name
		ju := &jobUser{name: name, uid: uid, gid: gid}
		ids, err := u.GroupIds()
		if err != nil {
			return nil, bad("%s: its groups: %v", name, err)
		}
		for _, s := range ids {
			g, err := strconv.Atoi(s)
			if err != nil {
				continue
			}
			if g == 0 || g == os.Getegid() {
				return nil, bad("%s is in the agent's group or root's (gid %d), which may read the agent's files", name, g)
			}
			ju.groups = append(ju.groups, uint32(g))
		}
		p.all = append(p.all, ju)
	}
	for _, u := range p.all {
		m := &members{uid: u.uid, log: log}
		if pids := m.list(); len(pids) > 0 {
			log.Warn("job user runs processes an earlier agent's jobs left; killing them", "user", u.name, "pids", fmt.Sprint(pids))
			m.killAll()
		}
	}
	return p, nil
}

// take gives a user with no job and no process to a job.
func (p *users) take() (*jobUser, error) {
	live := liveUIDs()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, u := range p.all {
		if !p.busy[u.uid] && !live[u.uid] && p.kept[u.uid] == nil {
			p.busy[u.uid] = true
			return u, nil
		}
	}
	return nil, bourse.Errorf(bourse.EUnavailable, "process.Start", "all %d job users run a job, or processes of one, or are kept from jobs for what one left (%d)", len(p.all), len(p.kept))
}

// free counts the users a job may be given now.
func (p *users) free() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, u := range p.all {
		if !p.busy[u.uid] && p.kept[u.uid] == nil {
			n++
		}
	}
	return n
}

// quarantine keeps u from every later job: a job left what the agent
// could not remove, which the next job as u could reach.
func (p *users) quarantine(u *jobUser, left []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.kept[u.uid] = left
	delete(p.busy, u.uid)
	p.log.Error("job user kept from every later job: its last job left what the agent could not remove; remove it and restart the agent",
		"user", u.name, "left", left)
}

// liveUIDs are the real users of the processes running.
func liveUIDs() map[int]bool {
	live := map[int]bool{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if in, ok := readInfo(pid, true, false); ok && !in.gone() {
			for _, u := range in.uids {
				live[u] = true
			}
		}
	}
	return live
}

// credential is what the job's leader runs as.
func (u *jobUser) credential() *syscall.Credential {
	return &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid), Groups: slices.Clone(u.groups)}
}

// scratch are the shared folders where a job may leave files of its user,
// which the next job of that user could read: they are removed when the
// job ends.
var scratch = []string{"/tmp", "/var/tmp", "/dev/shm", "/run/lock"}

// scrub removes what the user left at the top of the scratch folders.
func (u *jobUser) scrub(log *slog.Logger) {
	for _, dir := range scratch {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			p := filepath.Join(dir, e.Name())
			if owner(p) == u.uid {
				if err := os.RemoveAll(p); err != nil {
					log.Warn("remove a job's leftover", "path", p, "err", err)
				}
			}
		}
	}
}

func owner(path string) int {
	fi, err := os.Lstat(path)
	if err != nil {
		return -1
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

// reclaim gives the agent back everything under dir, without following
// links: once a job has ended, what it wrote is the agent's to send, and
// no later job of the same user may reach it.
func reclaim(dir string) error {
	uid, gid := os.Geteuid(), os.Getegid()
	return filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}

// reachable says why users other than the agent's cannot reach dir: a
// folder above it, or itself, that others may not enter.
func reachable(dir string) error {
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("%s (mode %04o) is closed to the job users: make it enterable by others (chmod o+x %s)", d, fi.Mode().Perm(), d)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// giveBack takes back a user whose job's processes are all gone; nothing
// for a nil pool or user.
func (p *users) giveBack(u *jobUser) {
	if p == nil || u == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.busy, u.uid)
}

func (u *jobUser) String() string {
	if u == nil {
		return "the agent's"
	}
	return u.name
}
