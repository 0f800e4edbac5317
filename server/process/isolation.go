package process

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/server/spool"
)

// isolate opens the job users and the cgroups the configuration asks for,
// and warns of what keeps jobs apart where it is not much.
func (h *Host) isolate() error {
	const op = "process.New"
	switch h.cfg.Cgroup {
	case "", CgroupAuto, CgroupOff, CgroupRequired:
	default:
		return &bourse.Error{Code: bourse.EInvalid, Op: op, Field: "cgroup", Message: fmt.Sprintf("%q: want auto, off or required", h.cfg.Cgroup)}
	}
	if len(h.cfg.Users) > 0 {
		if err := hardlinksProtected(); err != nil {
			return &bourse.Error{Code: bourse.EInvalid, Op: op, Field: "users", Message: err.Error()}
		}
		// The output folder is the agent's; a job enters it to reach its
		// own folders, and may not list it.
		if err := reachable(filepath.Dir(h.cfg.OutputDir)); err != nil {
			return &bourse.Error{Code: bourse.EInvalid, Op: op, Field: "output_dir", Message: err.Error()}
		}
		u, err := openUsers(h.cfg.Users, h.log)
		if err != nil {
			return err
		}
		if err := os.Chmod(h.cfg.OutputDir, 0o711); err != nil {
			return fmt.Errorf("%s: output directory: %w", op, err)
		}
		h.users = u
		syscall.Umask(0o077)
	}
	if h.cfg.Cgroup != CgroupOff {
		c, swept, err := openCgroups()
		for _, dir := range swept {
			h.log.Warn("removed the cgroup of an agent no longer running, and killed what ran in it", "cgroup", dir)
		}
		switch {
		case err == nil:
			h.cgroups = c
		case h.cfg.Cgroup == CgroupRequired:
			return &bourse.Error{Code: bourse.EUnavailable, Op: op, Field: "cgroup", Message: "no cgroup v2 can be made for jobs: " + err.Error()}
		default:
			h.log.Info("jobs get no cgroup", "why", err.Error())
		}
	}
	if h.users == nil {
		who := "THE AGENT'S OWN USER"
		if os.Geteuid() == 0 {
			who = "ROOT, THE AGENT'S OWN USER"
		}
		h.log.Warn("JOBS RUN AS "+who+": a job can read whatever the agent can (its configuration and NATS credentials, other jobs' environments and output) and signal other jobs; name job users (runner.job_users) to keep jobs apart",
			"uid", os.Geteuid())
		if h.cgroups == nil {
			h.log.Warn("A JOB IS KNOWN BY ITS PROCESS GROUP ALONE: a process of it that leaves the group (setsid, a double fork) is neither metered nor stopped with it; run the agent as root with job users, or where it can make cgroups")
		}
	}
	h.log.Info("jobs kept apart by " + h.Isolation())
	return nil
}

// Isolation says in words what keeps the host's jobs apart and whole.
func (h *Host) Isolation() string {
	var parts []string
	if h.users != nil {
		names := make([]string, len(h.users.all))
		for i, u := range h.users.all {
			names[i] = u.name
		}
		parts = append(parts, fmt.Sprintf("a user of its own each (%d: %s)", len(names), strings.Join(names, ", ")))
	} else {
		parts = append(parts, "nothing: jobs run as the agent's own user")
	}
	if h.cgroups != nil {
		parts = append(parts, "a cgroup each under "+h.cgroups.dir)
	} else if h.users == nil {
		parts = append(parts, "a process group each (a process that leaves it escapes)")
	}
	return strings.Join(parts, "; ")
}

// hardlinksProtected checks that a job cannot link a file it does not own
// (the agent's) into its results, which the agent reads to send.
func hardlinksProtected() error {
	data, err := os.ReadFile("/proc/sys/fs/protected_hardlinks")
	if err != nil || strings.TrimSpace(string(data)) == "1" {
		return nil
	}
	return errors.New("fs.protected_hardlinks is 0: a job could link the agent's files into its results; set it to 1 (sysctl fs.protected_hardlinks=1)")
}

// makeFolders makes the contract's output folder, the agent's, and in it
// the job's results and working folders. With a user, the output folder
// is open to the job's group alone, and the job's folders to it alone.
func makeFolders(dir, results, work string, u *jobUser) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	for _, d := range []string{results, work} {
		if err := os.Mkdir(d, 0o750); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
	}
	if u == nil {
		return nil
	}
	if err := errors.Join(os.Chown(dir, os.Geteuid(), u.gid), os.Chmod(dir, 0o750)); err != nil {
		return err
	}
	for _, d := range []string{results, work} {
		if err := errors.Join(os.Lchown(d, u.uid, u.gid), os.Chmod(d, 0o700)); err != nil {
			return err
		}
	}
	return nil
}

// release returns what a job held, once every process of it is gone:
// cleanup runs (what its launch made), its working folder goes, its
// results become the agent's, what its user left in the scratch folders
// goes, its cgroup goes and its user goes back to the pool.
func (h *Host) release(dir string, u *jobUser, cg *cgroup, log *slog.Logger, cleanup func()) func() {
	return func() {
		cleanup()
		if err := os.RemoveAll(filepath.Join(dir, WorkDir)); err != nil {
			log.Warn("remove the job's working folder", "err", err)
		}
		if u != nil {
			if err := reclaim(filepath.Join(dir, spool.ResultsDir)); err != nil {
				log.Warn("take back the job's results", "err", err)
			}
			if err := os.Chown(dir, os.Geteuid(), os.Getegid()); err != nil && !errors.Is(err, os.ErrNotExist) {
				log.Warn("take back the job's output folder", "err", err)
			}
		}
		if cg != nil {
			cg.waitEmpty()
			// An OCI runtime removes the cgroups it used itself.
			if err := cg.remove(); err != nil && !errors.Is(err, os.ErrNotExist) {
				log.Warn("remove the job's cgroup", "cgroup", cg.dir, "err", err)
			}
		}
		if u != nil {
			if left := u.clean(log); len(left) > 0 {
				h.users.quarantine(u, left)
				return
			}
		}
		h.users.giveBack(u)
	}
}

// FreeSlots says how many job users a job may get (server.Slotted): those
// free, and those that frozen jobs alone hold, which a job that needs one
// ends (frozen.go); none limits where jobs run as the agent's own user.
func (h *Host) FreeSlots() (free int, limited bool) {
	if h.users == nil {
		return 0, false
	}
	return h.users.free() + h.frozenUsers(), true
}
