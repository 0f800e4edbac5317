package process

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// members are a job's processes: its leader's process group, and every
// process of its user where it runs as a user of its own, and every process
// in its cgroup where it has one. A process that detaches (setsid, a double
// fork, a daemon) leaves the group, but neither its user nor its cgroup:
// those are the handles a job cannot shed. Without either, a process that
// leaves the group is not the job's (New warns of it).
type members struct {
	leader int     // its pid and process group; 0 for none (a user's leftovers)
	uid    int     // -1: the job runs as the agent's own user
	cgroup *cgroup // nil: none
	log    *slog.Logger
}

// info is what /proc says of a process, as far as members ask.
type info struct {
	state  byte // R, S, D, T, Z, …
	pgid   int
	uids   [4]int // real, effective, saved, file system
	cgroup string // the cgroup v2 path, as /proc/<pid>/cgroup gives it
}

// readInfo reads /proc/<pid>: always its stat; its status for the user and
// its cgroup file only where they are asked for.
func readInfo(pid int, user, cgroup bool) (info, bool) {
	var in info
	base := "/proc/" + strconv.Itoa(pid)
	data, err := os.ReadFile(base + "/stat")
	if err != nil {
		return in, false
	}
	if in.state, in.pgid, err = parseStat(string(data)); err != nil {
		return in, false
	}
	if user {
		data, err := os.ReadFile(base + "/status")
		if err != nil || !parseUIDs(string(data), &in.uids) {
			return in, false
		}
	}
	if cgroup {
		data, err := os.ReadFile(base + "/cgroup")
		if err != nil {
			return in, false
		}
		in.cgroup = parseCgroup(string(data))
	}
	return in, true
}

// gone is a process that has exited (a zombie waits only to be reaped:
// it runs nothing and holds no GPU memory).
func (in info) gone() bool { return in.state == 'Z' || in.state == 'X' }

func (m *members) has(pid int, in info) bool {
	if m.leader > 0 && (pid == m.leader || in.pgid == m.leader) {
		return true
	}
	if m.uid >= 0 {
		for _, u := range in.uids {
			if u == m.uid {
				return true
			}
		}
	}
	return m.cgroup != nil && m.cgroup.holds(in.cgroup)
}

// owns reports whether pid is one of the job's processes. On systems
// without /proc only the leader is.
func (m *members) owns(pid int) bool {
	if m.leader > 0 && pid == m.leader {
		return true
	}
	in, ok := readInfo(pid, m.uid >= 0, m.cgroup != nil)
	return ok && m.has(pid, in)
}

// list returns the job's live processes.
func (m *members) list() []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if in, ok := readInfo(pid, m.uid >= 0, m.cgroup != nil); ok && !in.gone() && m.has(pid, in) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// signal sends sig to each of the job's processes, through a pidfd (as
// os.FindProcess opens one) that it checks is still the job's, so that a
// pid reused meanwhile is never signalled. It returns the pids it reached.
func (m *members) signal(sig syscall.Signal) []int {
	if m.leader > 0 {
		if err := syscall.Kill(-m.leader, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			m.log.Warn("signal the job's process group", "pgid", m.leader, "signal", sig, "err", err)
		}
	}
	var reached []int
	for _, pid := range m.list() {
		p, err := os.FindProcess(pid)
		if err != nil {
			continue
		}
		if m.owns(pid) {
			if err := p.Signal(sig); err == nil {
				reached = append(reached, pid)
			} else if !errors.Is(err, os.ErrProcessDone) {
				m.log.Warn("signal the job's process", "pid", pid, "signal", sig, "err", err)
			}
		}
		_ = p.Release()
	}
	return reached
}

// freeze stops every process of the job with SIGSTOP, again until no
// process it has not stopped remains (one may fork while it is stopped).
func (m *members) freeze() {
	stopped := map[int]bool{}
	for {
		fresh := false
		for _, pid := range m.signal(syscall.SIGSTOP) {
			if !stopped[pid] {
				stopped[pid], fresh = true, true
			}
		}
		if !fresh {
			return
		}
	}
}

// killAll kills every process of the job and returns once none is left:
// through the cgroup at once where there is one, then SIGKILL to each
// process found, again until none is. A process SIGKILL cannot end (one
// stuck in the GPU driver) keeps it waiting, and the job's GPUs with it:
// it is said in the log every killWarn.
func (m *members) killAll() {
	const killWarn = 10 * time.Second
	if m.cgroup != nil {
		if err := m.cgroup.kill(); err != nil {
			m.log.Warn("kill the job's cgroup", "cgroup", m.cgroup.dir, "err", err)
		}
	}
	pause, since := time.Millisecond, time.Now()
	for {
		pids := m.signal(syscall.SIGKILL)
		if len(pids) == 0 {
			return
		}
		if time.Since(since) > killWarn {
			m.log.Warn("processes of the job outlive SIGKILL; its GPUs stay taken until they are gone", "pids", fmt.Sprint(pids))
			since = time.Now()
		}
		time.Sleep(pause)
		pause = min(2*pause, 100*time.Millisecond)
	}
}

// parseStat reads the state and process group, the third and fifth
// fields, of a /proc/<pid>/stat line. The command name, the second field,
// is in parentheses and may hold spaces and parentheses itself, so the
// fields are counted from its last ')'.
func parseStat(stat string) (state byte, pgid int, err error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("malformed stat %q", stat)
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 3 || len(f[0]) != 1 {
		return 0, 0, fmt.Errorf("malformed stat %q", stat)
	}
	pgid, err = strconv.Atoi(f[2]) // state, ppid, pgrp
	return f[0][0], pgid, err
}

// parseUIDs reads the Uid line of /proc/<pid>/status.
func parseUIDs(status string, uids *[4]int) bool {
	for line := range strings.Lines(status) {
		rest, ok := strings.CutPrefix(line, "Uid:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 4 {
			return false
		}
		for i, s := range f {
			n, err := strconv.Atoi(s)
			if err != nil {
				return false
			}
			uids[i] = n
		}
		return true
	}
	return false
}

// parseCgroup returns the cgroup v2 path of a /proc/<pid>/cgroup file, its
// "0::" line; "" where there is none.
func parseCgroup(data string) string {
	for line := range strings.Lines(data) {
		if p, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "0::"); ok {
			return p
		}
	}
	return ""
}
