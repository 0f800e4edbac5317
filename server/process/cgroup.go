package process

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// Cgroup modes of Config.Cgroup.
const (
	CgroupAuto     = "auto"     // a cgroup per job where one can be made (the default)
	CgroupOff      = "off"      // none
	CgroupRequired = "required" // New fails where none can be made
)

// cgroups is the cgroup v2 the runner makes its jobs' cgroups in: a child
// of the agent's own, bourse-<pid>-<n>, which it removes on Close. Each job
// starts inside its cgroup (CLONE_INTO_CGROUP), which no process of the
// job may leave: moving a process needs write access to the cgroups above,
// which are the agent's. The cgroups are used to know and kill a job's
// processes (cgroup.kill), not to limit them: no controller is enabled.
type cgroups struct {
	dir string // in the file system
	rel string // as /proc/<pid>/cgroup names it
}

// cgroup is one job's.
type cgroup struct {
	dir, rel string
}

var cgroupSeq atomic.Int64

// staleName matches a runner's cgroup, to find those of agents that died.
var staleName = regexp.MustCompile(`^bourse-([0-9]+)-[0-9]+$`)

// openCgroups makes the runner's cgroup under the agent's own, in the
// cgroup v2 hierarchy, or says why it cannot. It first removes the
// cgroups that agents no longer running left beside it, killing what
// still runs in them: jobs that outlived their agent.
func openCgroups() (*cgroups, []string, error) {
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, nil, fmt.Errorf("no /proc/self/cgroup: %w", err)
	}
	rel := parseCgroup(string(own))
	if rel == "" {
		return nil, nil, errors.New("this process is in no cgroup v2 (the hierarchy is not mounted, or only cgroup v1 is)")
	}
	dir, err := cgroupDir(rel)
	if err != nil {
		return nil, nil, err
	}
	swept := sweepCgroups(dir)
	name := fmt.Sprintf("bourse-%d-%d", os.Getpid(), cgroupSeq.Add(1))
	c := &cgroups{dir: filepath.Join(dir, name), rel: joinCgroup(rel, name)}
	if err := os.Mkdir(c.dir, 0o755); err != nil {
		return nil, swept, fmt.Errorf("cannot make a cgroup in %s (root, or a cgroup delegated to the agent's user, e.g. systemd's Delegate=yes): %w", dir, err)
	}
	if _, err := os.Stat(filepath.Join(c.dir, "cgroup.kill")); err != nil {
		_ = os.Remove(c.dir)
		return nil, swept, errors.New("the kernel's cgroups have no cgroup.kill (Linux 5.14 or later has it)")
	}
	return c, swept, nil
}

// cgroupDir finds the cgroup v2 mount that shows the cgroup rel, from
// /proc/self/mountinfo, and returns rel's directory in it.
func cgroupDir(rel string) (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional…] - fstype source super
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields, fs := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fields) < 5 || len(fs) < 1 || fs[0] != "cgroup2" {
			continue
		}
		root, mount := unescapeMount(fields[3]), unescapeMount(fields[4])
		if root == "/" {
			return filepath.Join(mount, rel), nil
		}
		if rest, ok := strings.CutPrefix(rel, root); ok && (rest == "" || rest[0] == '/') {
			return filepath.Join(mount, rest), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", errors.New("no cgroup v2 file system is mounted where this process's cgroup shows")
}

// unescapeMount undoes mountinfo's octal escapes of space, tab, newline
// and backslash.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func joinCgroup(rel, name string) string {
	if rel == "/" {
		return "/" + name
	}
	return rel + "/" + name
}

// sweepCgroups removes the runners' cgroups in dir whose agent is no
// longer running, killing what runs in them, and returns them.
func sweepCgroups(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var swept []string
	for _, e := range entries {
		m := staleName.FindStringSubmatch(e.Name())
		if m == nil || !e.IsDir() {
			continue
		}
		if _, err := os.Stat("/proc/" + m[1]); err == nil {
			continue // its agent runs (or another process has its pid: leave it)
		}
		stale := &cgroup{dir: filepath.Join(dir, e.Name())}
		_ = stale.kill()
		stale.waitEmpty()
		children, _ := os.ReadDir(stale.dir)
		for _, c := range children {
			if c.IsDir() {
				_ = os.Remove(filepath.Join(stale.dir, c.Name()))
			}
		}
		if err := os.Remove(stale.dir); err == nil {
			swept = append(swept, stale.dir)
		}
	}
	return swept
}

// make makes a job's cgroup, named for its contract.
func (c *cgroups) make(contract string) (*cgroup, error) {
	name := "job-" + contract
	g := &cgroup{dir: filepath.Join(c.dir, name), rel: joinCgroup(c.rel, name)}
	if err := os.Mkdir(g.dir, 0o755); err != nil {
		return nil, fmt.Errorf("the job's cgroup: %w", err)
	}
	return g, nil
}

// close removes the runner's cgroup, once its jobs' are gone.
func (c *cgroups) close() error { return os.Remove(c.dir) }

// holds reports whether a process in cgroup rel is in g, or below it.
func (g *cgroup) holds(rel string) bool {
	return rel == g.rel || strings.HasPrefix(rel, g.rel+"/")
}

// open opens the cgroup's directory, for CLONE_INTO_CGROUP.
func (g *cgroup) open() (*os.File, error) {
	return os.OpenFile(g.dir, os.O_RDONLY|syscall.O_DIRECTORY, 0)
}

// kill sends SIGKILL to every process in the cgroup and below, at once.
func (g *cgroup) kill() error {
	return os.WriteFile(filepath.Join(g.dir, "cgroup.kill"), []byte("1"), 0)
}

// populated reports whether a process is left in the cgroup or below.
func (g *cgroup) populated() bool {
	data, err := os.ReadFile(filepath.Join(g.dir, "cgroup.events"))
	if err != nil {
		return false
	}
	return strings.Contains(string(data), "populated 1")
}

// waitEmpty waits until no process is left in the cgroup.
func (g *cgroup) waitEmpty() {
	for pause := time.Millisecond; g.populated(); pause = min(2*pause, 100*time.Millisecond) {
		time.Sleep(pause)
	}
}

// canFreeze reports whether the cgroup has the freezer of cgroup v2
// (Linux 5.2 and later).
func (g *cgroup) canFreeze() bool {
	_, err := os.Stat(filepath.Join(g.dir, "cgroup.freeze"))
	return err == nil
}

// freezeWait bounds how long freeze waits for the kernel: a process in
// the driver's uninterruptible sleep freezes only once it leaves it.
const freezeWait = 10 * time.Second

// freeze freezes (on) or thaws every process in the cgroup and below,
// and waits until the kernel says it is done, at most freezeWait.
func (g *cgroup) freeze(on bool) error {
	v := "0"
	if on {
		v = "1"
	}
	if err := os.WriteFile(filepath.Join(g.dir, "cgroup.freeze"), []byte(v), 0); err != nil {
		return err
	}
	deadline := time.Now().Add(freezeWait)
	for pause := time.Millisecond; ; pause = min(2*pause, 100*time.Millisecond) {
		data, err := os.ReadFile(filepath.Join(g.dir, "cgroup.events"))
		if err != nil {
			return err
		}
		if strings.Contains(string(data), "frozen "+v) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not frozen %s after %v", v, freezeWait)
		}
		time.Sleep(pause)
	}
}

// remove removes the emptied cgroup.
func (g *cgroup) remove() error { return os.Remove(g.dir) }

func (g *cgroup) String() string {
	if g == nil {
		return "none"
	}
	return g.dir
}
