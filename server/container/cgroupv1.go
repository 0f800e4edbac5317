package container

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// On a machine with cgroup v1 hierarchies beside the unified one (systemd's
// hybrid layout), the runtime makes a container's cgroup in each of them
// too, under the runner's cgroup, which process.Host removes from the
// unified hierarchy alone. These remove the runner's folders from the v1
// hierarchies: its own on Close, and those of agents no longer running
// on New. The runtime removes each container's own.

// v1Mounts are the mount points of the cgroup v1 hierarchies.
func v1Mounts() []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields, fs := strings.Fields(pre), strings.Fields(post)
		if ok && len(fields) >= 5 && len(fs) >= 1 && fs[0] == "cgroup" {
			out = append(out, fields[4])
		}
	}
	return out
}

// removeV1 removes the runner's cgroup rel, emptied, and the folders of
// its jobs left in it, from every v1 hierarchy.
func removeV1(rel string) {
	if rel == "" {
		return
	}
	for _, m := range v1Mounts() {
		removeEmpty(filepath.Join(m, rel))
	}
}

func removeEmpty(dir string) {
	children, _ := os.ReadDir(dir)
	for _, c := range children {
		if c.IsDir() {
			_ = os.Remove(filepath.Join(dir, c.Name()))
		}
	}
	_ = os.Remove(dir)
}

// runnerCgroup matches the name process.Host gives its cgroup.
var runnerCgroup = regexp.MustCompile(`^bourse-([0-9]+)-[0-9]+$`)

// sweepV1 removes, from every v1 hierarchy, the runners' cgroups beside
// parent (the unified hierarchy's path of the agent's cgroup) whose agent
// is no longer running.
func sweepV1(parent string) {
	for _, m := range v1Mounts() {
		dir := filepath.Join(m, parent)
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if sub := runnerCgroup.FindStringSubmatch(e.Name()); sub != nil && e.IsDir() {
				if _, err := os.Stat("/proc/" + sub[1]); os.IsNotExist(err) {
					removeEmpty(filepath.Join(dir, e.Name()))
				}
			}
		}
	}
}
