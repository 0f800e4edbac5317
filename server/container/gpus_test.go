package container

import (
	"os"
	"path/filepath"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/bourse/bourse/contract"
)

// devices makes character device nodes in a folder of the test's, by
// name and major:minor (mknod needs root).
func devices(t *testing.T, nodes map[string][2]uint32) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mknod needs root")
	}
	dir := t.TempDir()
	for name, n := range nodes {
		path := filepath.Join(dir, name)
		if err := unix.Mknod(path, unix.S_IFCHR|0o666, int(unix.Mkdev(n[0], n[1]))); err != nil {
			t.Fatal(err)
		}
		if err := unix.Chmod(path, 0o666); err != nil { // as the driver's are, whatever the umask
			t.Fatal(err)
		}
	}
	return dir
}

func paths(ds []specs.LinuxDevice) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Path)
	}
	return out
}

// TestGPUsWithoutCDI: without a CDI specification a container gets its
// own GPUs' nodes and the driver's control nodes found, with the
// cgroup's leave for exactly those, and the driver's libraries where the
// CUDA images look; on a machine without the driver, nothing.
func TestGPUsWithoutCDI(t *testing.T) {
	dev := devices(t, map[string][2]uint32{"nvidia0": {195, 0}, "nvidia1": {195, 1}, "nvidiactl": {195, 255}})
	lib := t.TempDir()
	for _, f := range []string{"libcuda.so.1", "libnvidia-ml.so.535.1", "libz.so.1"} {
		require.NoError(t, os.WriteFile(filepath.Join(lib, f), nil, 0o644))
	}
	g, err := openGPUs(nil, dev, []string{lib})
	require.NoError(t, err)
	e, err := g.edits([]contract.GPU{{Index: 1}}, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"/dev/nvidia1", "/dev/nvidiactl"}, paths(e.devices), "GPU 1's node and the control node, not GPU 0's")
	require.Len(t, e.allow, 2)
	assert.Equal(t, int64(195), *e.allow[0].Major)
	assert.Equal(t, int64(1), *e.allow[0].Minor)
	assert.Equal(t, int64(255), *e.allow[1].Minor)
	var dests []string
	for _, m := range e.mounts {
		dests = append(dests, m.Destination)
		assert.Contains(t, m.Options, "ro")
	}
	assert.ElementsMatch(t, []string{DriverLibDir + "/libcuda.so.1", DriverLibDir + "/libnvidia-ml.so.535.1"}, dests)
	assert.Equal(t, DriverLibDir, e.libPath)

	g, err = openGPUs(nil, t.TempDir(), []string{lib})
	require.NoError(t, err)
	e, err = g.edits([]contract.GPU{{Index: 0}}, nil)
	require.NoError(t, err)
	assert.Empty(t, e.devices, "no driver here")
	assert.Empty(t, e.mounts, "and so no libraries")
}

// TestGPUsFromCDI: with the NVIDIA Container Toolkit's specification, a
// container gets the devices it names for its GPUs (by UUID where the
// runner knows it, else by index) and its common edits, the highest
// priority folder's where two name one device; a GPU it does not name
// is an error, not a container without it.
func TestGPUsFromCDI(t *testing.T) {
	dev := devices(t, map[string][2]uint32{"nvidia0": {195, 0}, "nvidia1": {195, 1}, "nvidiactl": {195, 255}})
	low, high := t.TempDir(), t.TempDir()
	spec := `cdiVersion: 0.5.0
kind: nvidia.com/gpu
devices:
- name: "0"
  containerEdits:
    deviceNodes: [{path: /dev/nvidia0, hostPath: ` + dev + `/nvidia0}]
- name: GPU-aaaa
  containerEdits:
    deviceNodes: [{path: /dev/nvidia0, hostPath: ` + dev + `/nvidia0}]
- name: "1"
  containerEdits:
    deviceNodes: [{path: /dev/nvidia1, hostPath: ` + dev + `/nvidia1}]
containerEdits:
  env: [NVIDIA_VISIBLE_DEVICES=void]
  deviceNodes: [{path: /dev/nvidiactl, hostPath: ` + dev + `/nvidiactl}]
  mounts:
  - {hostPath: /usr/lib/x86_64-linux-gnu/libcuda.so.535, containerPath: /usr/lib/x86_64-linux-gnu/libcuda.so.535, options: [ro, nosuid, nodev, bind]}
  hooks:
  - {hookName: createContainer, path: /usr/bin/nvidia-cdi-hook, args: [nvidia-cdi-hook, update-ldcache]}
`
	require.NoError(t, os.WriteFile(filepath.Join(low, "nvidia.yaml"), []byte(spec), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(low, "other.json"), []byte(`{"cdiVersion":"0.5.0","kind":"vendor.com/fpga","devices":[{"name":"x","containerEdits":{}}]}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(high, "nvidia.json"), []byte(`{"cdiVersion":"0.5.0","kind":"nvidia.com/gpu","devices":[
		{"name":"1","containerEdits":{"deviceNodes":[{"path":"/dev/nvidia1","hostPath":"`+dev+`/nvidia1","permissions":"rw"}]}}]}`), 0o644))
	g, err := openGPUs([]string{low, high, filepath.Join(high, "missing")}, "/nonexistent", nil)
	require.NoError(t, err)
	assert.Contains(t, g.String(), "nvidia.yaml")

	e, err := g.edits([]contract.GPU{{Index: 0}}, map[int]string{0: "GPU-aaaa"})
	require.NoError(t, err)
	assert.Equal(t, []string{"/dev/nvidia0", "/dev/nvidiactl"}, paths(e.devices))
	assert.Equal(t, []string{"NVIDIA_VISIBLE_DEVICES=void"}, e.env)
	require.Len(t, e.mounts, 1)
	assert.Equal(t, "/usr/lib/x86_64-linux-gnu/libcuda.so.535", e.mounts[0].Destination)
	require.Len(t, e.hooks.CreateContainer, 1)
	assert.Equal(t, "/usr/bin/nvidia-cdi-hook", e.hooks.CreateContainer[0].Path)

	e, err = g.edits([]contract.GPU{{Index: 1}}, map[int]string{1: "GPU-unknown"})
	require.NoError(t, err, "named by its index where its UUID is not in a specification")
	assert.Equal(t, []string{"/dev/nvidia1"}, paths(e.devices), "the higher priority specification's device, without the lower's common edits")
	assert.Equal(t, "rw", e.allow[0].Access)

	_, err = g.edits([]contract.GPU{{Index: 5}}, nil)
	assert.ErrorContains(t, err, "no CDI device nvidia.com/gpu=5")

	bad := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bad, "broken.yaml"), []byte("kind: nvidia.com/gpu\ndevices: [{name: 0, containerEdits: {deviceNodes: 3}}]\n"), 0o644))
	_, err = openGPUs([]string{bad}, "/dev", nil)
	assert.ErrorContains(t, err, "broken.yaml")
}
