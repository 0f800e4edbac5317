package process

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/server/spool"
)

// A job that cannot checkpoint (CheckpointEnv "none") is frozen by a
// suspend rather than stopped, and kept for a resume on the same GPUs.
// Frozen, it still holds what it ran with: its job user, its memory, its
// GPUs' memory; and its contract, settled at the suspend, pays for none
// of it. Two jobs suspended at once held both users of a two-user server
// for ten minutes, and every later job failed to start (the probe of
// 2026-12-01). So a frozen job is kept only while it keeps no work from
// running:
//
//   - at most StoppedTTL: one not resumed by then is ended;
//   - at most MaxFrozen at once: a suspend that freezes one more ends the
//     oldest frozen job;
//   - never in a new job's way: a job that needs a job user while none is
//     free ends a frozen job and gets its user, cleaned as at any job's
//     end. It ends the job it resumes where it resumes one on other GPUs
//     (which can now thaw for nobody), else the oldest, which has had the
//     longest for its resume and has the least of StoppedTTL left. So
//     FreeSlots counts the users of frozen jobs as free: the server
//     offers the GPUs it can run a job on.
//
// A frozen job that is ended is killed; its stderr says why, and its exit
// is the kill's (137). A resume that finds it gone starts the job anew,
// as a resume on other GPUs does: from its beginning, or from a
// checkpoint of its own that the program finds (its working folder went
// with it).

// DefaultMaxFrozen is the most jobs kept frozen at once without job
// users; with them it is one fewer than the users (at least 1).
const DefaultMaxFrozen = 4

// frozenBound resolves cfg.MaxFrozen: the most jobs kept frozen at once,
// 0 for none. It refuses a bound more than the job users, which no pool
// can reach, and a negative StoppedTTL.
func frozenBound(cfg HostConfig) (int, error) {
	const op = "process.New"
	users := len(cfg.Users)
	switch {
	case cfg.StoppedTTL < 0:
		return 0, &bourse.Error{Code: bourse.EInvalid, Op: op, Field: "stopped_ttl", Message: fmt.Sprintf(
			"%s: want how long a frozen job is kept for its resume (0 for %s)", cfg.StoppedTTL, DefaultStoppedTTL)}
	case cfg.MaxFrozen < 0:
		return 0, nil
	case cfg.MaxFrozen == 0 && users > 0:
		return max(users-1, 1), nil
	case cfg.MaxFrozen == 0:
		return DefaultMaxFrozen, nil
	case users > 0 && cfg.MaxFrozen > users:
		return 0, &bourse.Error{Code: bourse.EInvalid, Op: op, Field: "max_frozen", Message: fmt.Sprintf(
			"%d: more than the %d job users, and each frozen job holds one: want %d or fewer, 0 for the default (%d), or -1 to freeze none",
			cfg.MaxFrozen, users, users, max(users-1, 1))}
	}
	return cfg.MaxFrozen, nil
}

// takeUser gives a job a user of the pool: a free one, else the user of a
// frozen job, which is ended for it (frozenFor).
func (h *Host) takeUser(a server.Assignment) (*jobUser, error) {
	for {
		u, err := h.users.take()
		if err == nil {
			return u, nil
		}
		// Another job may take the user ended for this one first, and a
		// user an ended job left something to is kept from jobs: end the
		// next, until none is left.
		id, p := h.frozenFor(a.Resumes)
		if p == nil {
			return nil, err
		}
		h.endFrozen(id, p, "its job user was needed for a new job", "for", a.Contract)
	}
}

// frozenFor takes from those kept the frozen job to end for a new job's
// room: the one the new job resumes, else the oldest; nil where none is
// kept.
func (h *Host) frozenFor(resumes string) (string, *proc) {
	h.mu.Lock()
	defer h.mu.Unlock()
	id, p := h.oldestFrozen(nil)
	if q, ok := h.stopped[resumes]; ok && resumes != "" && !q.hasExited() {
		id, p = resumes, q
	}
	if p != nil {
		delete(h.stopped, id)
	}
	return id, p
}

// oldestFrozen is the job kept frozen longest, other than but; h.mu is
// held.
func (h *Host) oldestFrozen(but *proc) (string, *proc) {
	var id string
	var old *proc
	for k, p := range h.stopped {
		if p == but || p.hasExited() {
			continue
		}
		if old == nil || p.frozen.Before(old.frozen) || p.frozen.Equal(old.frozen) && cmp.Less(k, id) {
			id, old = k, p
		}
	}
	return id, old
}

// frozenUsers counts the job users that frozen jobs alone hold.
func (h *Host) frozenUsers() int {
	if h.users == nil {
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.countFrozen()
}

// countFrozen counts the jobs kept frozen; h.mu is held.
func (h *Host) countFrozen() int {
	n := 0
	for _, p := range h.stopped {
		if !p.hasExited() {
			n++
		}
	}
	return n
}

// endFrozen kills a frozen job that is no longer kept, saying why in its
// stderr (its client's to read) and in the log, with logArgs, and returns
// once what it held (its user among it) is given back.
func (h *Host) endFrozen(id string, p *proc, why string, logArgs ...any) {
	if p.ttl != nil {
		p.ttl.Stop()
	}
	if p.hasExited() {
		return
	}
	h.log.Info("job frozen by a suspend ended before any resume", append([]any{"contract", id, "pid", p.pid, "why", why}, logArgs...)...)
	if f, err := os.OpenFile(filepath.Join(p.dir, spool.StderrFile), os.O_WRONLY|os.O_APPEND, 0); err == nil {
		_, _ = fmt.Fprintf(f, "bourse: the job, frozen by the suspend of %s, was ended before any resume: %s\n", id, why)
		_ = f.Close()
	}
	p.kill()
}

// takeStopped returns the frozen job the assignment resumes, thawed, if it
// was frozen on the same GPUs.
func (h *Host) takeStopped(a server.Assignment) *proc {
	if a.Resumes == "" {
		return nil
	}
	h.mu.Lock()
	p, ok := h.stopped[a.Resumes]
	if ok && sameGPUs(p.gpus, a.GPUs) {
		delete(h.stopped, a.Resumes)
	} else {
		p = nil
	}
	h.mu.Unlock()
	if p == nil {
		return nil
	}
	p.ttl.Stop()
	p.gpus = nil
	if !p.thaw() {
		return nil
	}
	h.log.Info("job resumed", "contract", a.Contract, "resumes", a.Resumes, "pid", p.pid)
	return p
}

// keepStopped keeps a frozen job for its resume, for at most StoppedTTL,
// and ends the oldest frozen job where it makes one more than MaxFrozen.
func (h *Host) keepStopped(id string, p *proc) {
	h.mu.Lock()
	p.frozen = time.Now()
	h.stopped[id] = p
	p.ttl = time.AfterFunc(h.cfg.StoppedTTL, func() {
		h.mu.Lock()
		kept := h.stopped[id] == p
		if kept {
			delete(h.stopped, id)
		}
		h.mu.Unlock()
		if kept {
			h.endFrozen(id, p, fmt.Sprintf("not resumed within %s", h.cfg.StoppedTTL))
		}
	})
	type frozen struct {
		id string
		p  *proc
	}
	var over []frozen
	for h.countFrozen() > h.maxFrozen {
		oid, old := h.oldestFrozen(p)
		if old == nil {
			break
		}
		delete(h.stopped, oid)
		over = append(over, frozen{oid, old})
	}
	h.mu.Unlock()
	for _, f := range over {
		h.endFrozen(f.id, f.p, fmt.Sprintf("a later suspend froze one more job than the %d this server keeps frozen", h.maxFrozen))
	}
}
