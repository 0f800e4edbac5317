package container

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
)

// These are jobs that try to leave their container, each refused: run
// as root, take the machine's processes or memory, reach the network or
// the host's files or another job's, write the image, hold a capability,
// make a namespace, open a GPU not its own.

// TestImageUserRootRunsAsJobUser: an image whose USER is root runs as a
// job user of the pool all the same.
func TestImageUserRootRunsAsJobUser(t *testing.T) {
	rg := newRig(t, nil)
	code, out := rg.run(t, rootRef, "id -u; id -g")
	require.Equal(t, 0, code)
	ids := strings.Fields(out)
	require.Len(t, ids, 2, out)
	var uids []string
	for _, name := range rg.users {
		u, err := user.Lookup(name)
		require.NoError(t, err)
		uids = append(uids, u.Uid)
	}
	assert.Contains(t, uids, ids[0], "a job user's uid, not root's")
	assert.NotEqual(t, "0", ids[1], "nor root's group")
}

// TestForkBombHeld: a job that forks without end is held by its pids
// limit; it ends when stopped, and the runner goes on.
func TestForkBombHeld(t *testing.T) {
	rg := newRig(t, func(c *Config) { c.Pids, c.Grace = 32, 200*time.Millisecond })
	t.Run("Bounded", func(t *testing.T) {
		// The shell gives up at the first fork refused: a subshell forks,
		// so that the job's first process goes on to say so.
		id, j := rg.start(t, boxRef, `(for i in $(seq 1 100); do sleep 1000 & done) 2>/dev/null; echo spawned; exec sleep 1000`)
		rg.waitOutput(t, id, "spawned")
		procs := strings.Fields(readFile(t, filepath.Join(cgroupOf(t, rg.initPID(t, id)), "cgroup.procs")))
		assert.LessOrEqual(t, len(procs), 32, "no more processes than the limit")
		assert.Greater(t, len(procs), 16, "it forked until the limit")
		require.NoError(t, j.Stop(context.Background(), contract.ReasonKilled))
		<-j.Done()
		rg.waitExit(t, id)
	})
	t.Run("Bomb", func(t *testing.T) {
		id, j := rg.start(t, boxRef, `echo ready; b() { b | b & }; b`)
		rg.waitOutput(t, id, "ready")
		require.NoError(t, j.Stop(context.Background(), contract.ReasonKilled))
		<-j.Done()
		rg.waitExit(t, id)
	})
	code, out := rg.run(t, boxRef, "echo after")
	assert.Equal(t, 0, code)
	assert.Equal(t, "after\n", out, "the runner goes on")
	assert.Empty(t, rg.leftovers(t))
}

// TestMemoryHogHeld: a job that takes more memory than its limit is
// killed by the kernel within its cgroup, not the machine's other work.
func TestMemoryHogHeld(t *testing.T) {
	rg := newRig(t, func(c *Config) { c.MemoryPerGPU = 64 << 20 })
	// A 256 MiB string, and the copies awk makes of it on the way.
	code, out := rg.run(t, boxRef, `awk 'BEGIN { s = "x"; for (i = 0; i < 28; i++) s = s s; print length(s) }'; echo "hog $?"`)
	assert.Equal(t, 0, code, "the job's shell goes on")
	assert.Equal(t, "hog 137\n", out, "the hog was killed (SIGKILL from the OOM killer)")
}

// TestNoNetwork: a container reaches neither the host's loopback nor its
// other addresses (where the agent's NATS listens), and has no interface
// but its own loopback.
func TestNoNetwork(t *testing.T) {
	rg := newRig(t, nil)
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	require.NoError(t, err)
	defer ln.Close()
	var accepted atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			_ = c.Close()
		}
	}()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	targets := []string{"127.0.0.1"}
	if ip := hostAddress(); ip != "" {
		targets = append(targets, ip)
	}
	script := "ls /sys/class/net;"
	for _, ip := range targets {
		script += fmt.Sprintf(` if nc -w 2 %s %s </dev/null; then echo "reached %s"; else echo "refused %s"; fi;`, ip, port, ip, ip)
	}
	code, out := rg.run(t, boxRef, script)
	require.Equal(t, 0, code)
	assert.True(t, strings.HasPrefix(out, "lo\n"), "a loopback alone: %q", out)
	for _, ip := range targets {
		assert.Contains(t, out, "refused "+ip)
	}
	assert.NotContains(t, out, "reached")
	assert.Zero(t, accepted.Load(), "no connection reached the host's listener")
}

// hostAddress is an IPv4 address of the host's other than loopback.
func hostAddress() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	return ""
}

// TestHostFilesOutOfReach: a container sees the image and its own
// folders: not the host's files, however open their modes, nor another
// job's working folder or processes, nor the agent's output folder.
func TestHostFilesOutOfReach(t *testing.T) {
	rg := newRig(t, nil)
	secret := filepath.Join(filepath.Dir(rg.out), "secret.txt")
	require.NoError(t, os.WriteFile(secret, []byte("host-secret"), 0o644))
	require.NoError(t, os.Chmod(secret, 0o644))
	a, ja := rg.start(t, boxRef, `echo a-secret > $HOME/s; echo ready; exec sleep 1000`)
	rg.waitOutput(t, a, "ready")
	defer func() { _ = ja.Stop(context.Background(), contract.ReasonKilled) }()
	aWork := filepath.Join(rg.out, a, "work")
	code, out := rg.run(t, boxRef, fmt.Sprintf(`cat %s %s/s 2>&1; ls %s 2>&1; ls -d /proc/[0-9]*; ls /; ls $HOME`,
		secret, aWork, rg.out))
	require.Equal(t, 0, code)
	assert.NotContains(t, out, "host-secret", "the host's file")
	assert.Contains(t, out, "can't open '"+secret+"': No such file")
	assert.NotContains(t, out, "a-secret", "the other job's working folder")
	assert.Contains(t, out, "can't open '"+aWork+"/s': No such file")
	assert.Contains(t, out, "ls: "+rg.out+": No such file", "the agent's output folder")
	assert.Contains(t, out, "/proc/1\n", "its own processes")
	assert.NotContains(t, out, "/proc/"+strconv.Itoa(rg.initPID(t, a)), "not the other job's")
	for _, name := range []string{"bin", "bourse", "etc", "tmp"} {
		assert.Contains(t, out, name+"\n", "the image's root and its folders")
	}
}

// TestReadOnlyRoot: a container writes its working folder, its results
// and a /tmp of bounded size, never its root, which is the image's: the
// image stays as it was pulled.
func TestReadOnlyRoot(t *testing.T) {
	rg := newRig(t, nil)
	code, out := rg.run(t, boxRef, `for f in /var/data/x /bin/x /etc/passwd /x; do if touch $f 2>/dev/null; then echo "wrote $f"; else echo "refused $f"; fi; done;`+
		`touch $HOME/ok $BOURSE_RESULTS/ok /tmp/ok && echo "wrote its own";`+
		`head -c 20000000 /dev/zero > /tmp/big 2>/dev/null || echo "tmp full at $(wc -c < /tmp/big)"`)
	require.Equal(t, 0, code)
	for _, f := range []string{"/var/data/x", "/bin/x", "/etc/passwd", "/x"} {
		assert.Contains(t, out, "refused "+f)
	}
	assert.Contains(t, out, "wrote its own")
	var full int
	i := strings.Index(out, "tmp full at ")
	require.GreaterOrEqual(t, i, 0, out)
	_, err := fmt.Sscanf(out[i:], "tmp full at %d", &full)
	require.NoError(t, err)
	assert.LessOrEqual(t, full, 16<<20, "/tmp is bounded")
	entries, err := os.ReadDir(rg.images.root)
	require.NoError(t, err)
	for _, e := range entries {
		assert.NotEqual(t, "bourse", e.Name(), "the image was not written (no mount point made in it)")
	}
}

// TestNoCapabilities: a container's process holds no capability and can
// gain none, and runs under a seccomp filter.
func TestNoCapabilities(t *testing.T) {
	rg := newRig(t, nil)
	code, out := rg.run(t, rootRef, `grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp):' /proc/self/status`)
	require.Equal(t, 0, code)
	status := map[string]string{}
	for line := range strings.Lines(out) {
		k, v, _ := strings.Cut(line, ":")
		status[k] = strings.TrimSpace(v)
	}
	for _, c := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
		assert.Equal(t, "0000000000000000", status[c], c)
	}
	assert.Equal(t, "1", status["NoNewPrivs"])
	assert.Equal(t, "2", status["Seccomp"], "filtered")
}

// TestNoNamespaces: a container cannot make a namespace, a user
// namespace included, which an unprivileged process could elsewhere (and
// with it capabilities over its own mounts and network).
func TestNoNamespaces(t *testing.T) {
	rg := newRig(t, nil)
	code, out := rg.run(t, boxRef, `for ns in -U -n -m -r; do if unshare $ns true 2>/dev/null; then echo "made $ns"; else echo "refused $ns"; fi; done`)
	require.Equal(t, 0, code)
	assert.NotContains(t, out, "made")
	assert.Equal(t, 4, strings.Count(out, "refused"), out)
}

// TestOnlyItsGPUs: a container has its own GPUs' device nodes and the
// driver's, and no other GPU's, and may use them.
func TestOnlyItsGPUs(t *testing.T) {
	// Nodes that behave as /dev/null, /dev/zero and /dev/full, named as
	// the driver's are.
	dev := devices(t, map[string][2]uint32{"nvidia0": {1, 3}, "nvidia1": {1, 5}, "nvidiactl": {1, 7}})
	rg := newRig(t, func(c *Config) { c.DevDir = dev })
	id, j := rg.start(t, boxRef, `ls /dev/nvidia*; echo x > /dev/nvidia0 && echo "wrote its GPU"; echo "$CUDA_VISIBLE_DEVICES"`)
	code, out := rg.finish(t, id, j)
	require.Equal(t, 0, code, rg.file(t, id, "stderr"))
	assert.Equal(t, "/dev/nvidia0\n/dev/nvidiactl\nwrote its GPU\n0\n", out, "GPU 0's node and the control node, not GPU 1's")
}
