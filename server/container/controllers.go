package container

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// needControllers makes sure that the containers' cgroups, children of
// the runner's cgroup dir, can have the controllers their limits need,
// where cgroup v2 alone holds them (mount has cgroup.controllers; with
// cgroup v1's hierarchies beside it the runtime sets the limits there).
// The runtime enables them in the runner's cgroup itself, but not in the
// agent's, above it: a cgroup that holds processes (the agent's own,
// unless it runs at the root) cannot hand controllers to its children,
// and the first container would fail to start. Here it fails at once,
// saying what to do.
func needControllers(mount, dir string, want []string) error {
	if _, err := os.Stat(filepath.Join(mount, "cgroup.controllers")); err != nil {
		return nil // cgroup v1's hierarchies hold the controllers
	}
	has := func(d string) []string {
		data, _ := os.ReadFile(filepath.Join(d, "cgroup.controllers"))
		return strings.Fields(string(data))
	}
	missing := func() []string {
		var out []string
		for _, c := range want {
			if !slices.Contains(has(dir), c) {
				out = append(out, c)
			}
		}
		return out
	}
	m := missing()
	if len(m) == 0 {
		return nil
	}
	parent := filepath.Dir(dir)
	var errs []error
	for _, c := range m {
		if err := os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte("+"+c), 0); err != nil {
			errs = append(errs, err)
		}
	}
	if m = missing(); len(m) == 0 {
		return nil
	}
	return fmt.Errorf("the containers' cgroups cannot have the %s controllers their limits need: the agent's cgroup %s does not hand them down (%v); "+
		"run the agent as a systemd service with Delegate=yes and DelegateSubgroup=agent (systemd 254 and later), "+
		"or in a cgroup of its own whose parent has them", strings.Join(m, " and "), parent, errors.Join(errs...))
}
