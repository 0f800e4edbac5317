package market_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The CPU a benchmark's processes spend, read from Linux's /proc, so that
// a run can say what each part costs per contract beside how many it
// makes: on two shared cores the rate says more about the machine than
// about the exchange.

// userHZ is the unit of /proc's CPU times: USER_HZ, 100 on Linux whatever
// the kernel's own tick.
const userHZ = 100

// cpuOfSelf is this process's user and system time.
func cpuOfSelf() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuOf is the user and system time of process pid, with that of its
// children that have exited (and were waited for), and, with live, of
// its children still running: PostgreSQL's postmaster and its backends.
func cpuOf(pid int, live bool) time.Duration {
	f, ok := statOf(pid)
	if !ok {
		return 0
	}
	ticks := f[11] + f[12] + f[13] + f[14] // utime stime cutime cstime
	if live {
		for _, c := range childrenOf(pid) {
			if g, ok := statOf(c); ok {
				ticks += g[11] + g[12]
			}
		}
	}
	return time.Duration(ticks) * time.Second / userHZ
}

// statOf is /proc/pid/stat's numeric fields after the command's name,
// from the state on (f[0] is field 3 of proc(5), f[11] utime), with the
// parent's pid at f[1].
func statOf(pid int) ([]int64, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the name may hold spaces
	if i < 0 {
		return nil, false
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 15 {
		return nil, false
	}
	out := make([]int64, len(fields))
	for k, v := range fields {
		out[k], _ = strconv.ParseInt(v, 10, 64)
	}
	return out, true
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		c, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f, ok := statOf(c); ok && f[1] == int64(pid) {
			out = append(out, c)
		}
	}
	return out
}
