package process

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/bourse/bourse"
)

// A job user runs one job after another, for different clients. What a
// job leaves of its user beyond its processes and folders lasts into the
// next job as that user, which could read it, or be read by it: a crontab
// that reads the next client's environment and rewrites its results (the
// probe of 2026-12-01 did just that), an at job, SysV IPC objects (1 GiB
// of shared memory left pinned), files in the shared scratch folders, a
// systemd user manager kept lingering. So at the end of a job the agent
// removes them all (clean), as Slurm's and systemd's clean-ups do
// (RemoveIPC=, pam_systemd), and a user with anything left is kept from
// every later job (users.quarantine) rather than handed on.

// cronSpools are the folders of users' crontabs, one file a user, named
// for it (Debian's cron, and cronie's); atSpools hold at jobs, files
// owned by the user who queued them.
var (
	cronSpools = []string{"/var/spool/cron/crontabs", "/var/spool/cron"}
	atSpools   = []string{"/var/spool/cron/atjobs", "/var/spool/at"}
	lingerDir  = "/var/lib/systemd/linger"
)

// clean removes what the user left behind its job, and returns what it
// could not remove: nothing where the user is clean to hand on.
func (u *jobUser) clean(log *slog.Logger) (left []string) {
	u.scrub(log)
	for _, dir := range cronSpools {
		removeIfOwned(filepath.Join(dir, u.name), u.uid, log)
	}
	for _, dir := range atSpools {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			removeIfOwned(filepath.Join(dir, e.Name()), u.uid, log)
		}
	}
	// Lingering keeps a user's systemd manager, and its units, running
	// with no login: only root makes a user linger, so a file here is a
	// job's doing, through a hole, or an operator's mistake.
	if err := os.Remove(filepath.Join(lingerDir, u.name)); err == nil {
		log.Warn("a job user lingered (systemd); no longer", "user", u.name)
	}
	for _, o := range ipcOf(u.uid) {
		if err := o.remove(); err != nil {
			log.Warn("remove a job's IPC object", "user", u.name, "object", o, "err", err)
		}
	}
	return u.leftovers()
}

// leftovers lists what the user still has that a job may have left:
// processes, IPC objects, crontabs and at jobs, files at the top of the
// scratch folders.
func (u *jobUser) leftovers() []string {
	var left []string
	if liveUIDs()[u.uid] {
		left = append(left, "processes")
	}
	for _, o := range ipcOf(u.uid) {
		left = append(left, o.String())
	}
	for _, dir := range cronSpools {
		if owner(filepath.Join(dir, u.name)) >= 0 {
			left = append(left, "a crontab in "+dir)
		}
	}
	for _, dir := range append(slices.Clone(atSpools), scratch...) {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if p := filepath.Join(dir, e.Name()); owner(p) == u.uid {
				left = append(left, p)
			}
		}
	}
	return left
}

// removeIfOwned removes path if it is uid's, without following a link.
func removeIfOwned(path string, uid int, log *slog.Logger) {
	if owner(path) != uid {
		return
	}
	if err := os.RemoveAll(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		log.Warn("remove a job's leftover", "path", path, "err", err)
	}
}

// ipcObject is a SysV IPC object: shared memory, a message queue or a
// semaphore set.
type ipcObject struct {
	kind string // "shm", "msg" or "sem"
	id   int
}

func (o ipcObject) String() string { return fmt.Sprintf("SysV %s %d", o.kind, o.id) }

// remove removes the object (IPC_RMID): a shared memory segment goes once
// no process has it attached, and the job's processes are gone.
func (o ipcObject) remove() error {
	var errno unix.Errno
	switch o.kind {
	case "shm":
		_, err := unix.SysvShmCtl(o.id, unix.IPC_RMID, nil)
		return err
	case "msg":
		_, _, errno = unix.Syscall(unix.SYS_MSGCTL, uintptr(o.id), unix.IPC_RMID, 0)
	case "sem":
		_, _, errno = unix.Syscall6(unix.SYS_SEMCTL, uintptr(o.id), 0, unix.IPC_RMID, 0, 0, 0)
	}
	if errno != 0 {
		return errno
	}
	return nil
}

// ipcOf lists the SysV IPC objects uid owns, from /proc/sysvipc (of the
// agent's IPC namespace: a container has its own, gone with it).
func ipcOf(uid int) []ipcObject {
	var out []ipcObject
	for kind, idCol := range map[string]string{"shm": "shmid", "msg": "msqid", "sem": "semid"} {
		f, err := os.Open(filepath.Join("/proc/sysvipc", kind))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		var idAt, uidAt = -1, -1
		for first := true; sc.Scan(); first = false {
			cols := strings.Fields(sc.Text())
			if first {
				idAt, uidAt = slices.Index(cols, idCol), slices.Index(cols, "uid")
				continue
			}
			if idAt < 0 || uidAt < 0 || len(cols) <= max(idAt, uidAt) {
				break
			}
			id, err1 := strconv.Atoi(cols[idAt])
			owner, err2 := strconv.Atoi(cols[uidAt])
			if err1 == nil && err2 == nil && owner == uid {
				out = append(out, ipcObject{kind, id})
			}
		}
		_ = f.Close()
	}
	slices.SortFunc(out, func(a, b ipcObject) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// schedulers are the programs that run a user's commands later, with no
// job: cron and at. Each allows users by the files named.
var schedulers = []struct {
	name, program, allow, deny string
	// neither is whether a user may use it where neither file exists
	// (Debian's cron: everyone; at: root alone).
	neither bool
}{
	{"cron", "/usr/bin/crontab", "/etc/cron.allow", "/etc/cron.deny", true},
	{"at", "/usr/bin/at", "/etc/at.allow", "/etc/at.deny", false},
}

// checkSchedulers refuses job users that cron or at would take commands
// from: a job could leave one to run during a later job as the same user.
// A scheduler not installed takes none.
func checkSchedulers(names []string) error {
	for _, s := range schedulers {
		if _, err := os.Stat(s.program); err != nil {
			continue
		}
		allow, allowErr := listed(s.allow)
		deny, denyErr := listed(s.deny)
		var may []string
		for _, name := range names {
			switch {
			case allowErr == nil:
				if allow[name] {
					may = append(may, name)
				}
			case denyErr == nil:
				if !deny[name] {
					may = append(may, name)
				}
			case s.neither:
				may = append(may, name)
			}
		}
		if len(may) > 0 {
			return &bourse.Error{Code: bourse.EInvalid, Op: "process.New", Field: "users", Message: fmt.Sprintf(
				"%s takes commands from the job users %s, which a job could leave to run during a later client's job: add them to %s (and keep them out of %s); docs/operations.md, job users",
				s.name, strings.Join(may, ", "), s.deny, s.allow)}
		}
	}
	return nil
}

// listed reads a cron or at allow or deny file: a user a line.
func listed(path string) (map[string]bool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for line := range strings.Lines(string(data)) {
		if name := strings.TrimSpace(line); name != "" && !strings.HasPrefix(name, "#") {
			out[name] = true
		}
	}
	return out, nil
}
