package container

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNeedControllers: on cgroup v2 alone, a runner whose cgroup cannot
// have the controllers its containers' limits need is refused at its
// start, saying how to run the agent; it asks the agent's cgroup for them
// first. With cgroup v1's hierarchies, the runtime's affair.
func TestNeedControllers(t *testing.T) {
	mount := t.TempDir()
	agent := filepath.Join(mount, "system.slice", "bourse.service")
	runner := filepath.Join(agent, "bourse-1-1")
	require.NoError(t, os.MkdirAll(runner, 0o755))
	write := func(path, s string) { require.NoError(t, os.WriteFile(path, []byte(s), 0o644)) }

	assert.NoError(t, needControllers(mount, runner, []string{"pids", "memory"}), "no cgroup.controllers at the mount: v1 holds them")

	write(filepath.Join(mount, "cgroup.controllers"), "cpu memory pids\n")
	write(filepath.Join(runner, "cgroup.controllers"), "pids\n")
	write(filepath.Join(agent, "cgroup.subtree_control"), "")
	assert.NoError(t, needControllers(mount, runner, []string{"pids"}))
	err := needControllers(mount, runner, []string{"pids", "memory"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cannot have the memory controllers")
	assert.Contains(t, err.Error(), "DelegateSubgroup=agent")
	data, _ := os.ReadFile(filepath.Join(agent, "cgroup.subtree_control"))
	assert.Equal(t, "+memory", string(data), "it asked the agent's cgroup first")

	write(filepath.Join(runner, "cgroup.controllers"), "memory pids\n")
	assert.NoError(t, needControllers(mount, runner, []string{"pids", "memory"}))
}
