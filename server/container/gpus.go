package container

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
	"gopkg.in/yaml.v3"
	cdi "tags.cncf.io/container-device-interface/specs-go"

	"github.com/bourse/bourse/contract"
)

// gpuKind is the kind of the NVIDIA Container Toolkit's CDI specification
// (nvidia-ctk cdi generate): its devices are GPUs, named by index
// ("0"), UUID ("GPU-…") and MIG slice ("MIG-…").
const gpuKind = "nvidia.com/gpu"

// DefaultCDIDirs are where CDI specifications are, lowest priority first,
// as the CDI specification has them.
var DefaultCDIDirs = []string{"/etc/cdi", "/var/run/cdi"}

// edits is what of the machine a container gets for its GPUs: their
// device nodes (and the cgroup's leave to use them), the driver's
// libraries, variables and hooks.
type edits struct {
	devices []specs.LinuxDevice
	allow   []specs.LinuxDeviceCgroup
	mounts  []specs.Mount
	env     []string
	hooks   specs.Hooks
	gids    []uint32
	// libPath is a folder of the driver's libraries to add to the
	// container's LD_LIBRARY_PATH, where the runner mounted them there.
	libPath string
}

// gpuSource says where a runner finds what a container's GPUs need.
type gpuSource struct {
	specs  []*cdi.Spec // the nvidia.com/gpu specifications found, lowest priority first
	files  []string    // the files they came from
	devDir string      // where the device nodes are without CDI: /dev
	libDir []string    // where the driver's libraries are without CDI
}

// openGPUs reads the CDI specifications of kind nvidia.com/gpu in dirs
// (*.yaml, *.yml, *.json). A file that cannot be read or parsed is an
// error: the operator wrote it to say what a GPU is.
func openGPUs(dirs []string, devDir string, libDirs []string) (*gpuSource, error) {
	g := &gpuSource{devDir: devDir, libDir: libDirs}
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("CDI specifications in %s: %w", dir, err)
		}
		for _, e := range entries {
			ext := filepath.Ext(e.Name())
			if e.IsDir() || (ext != ".yaml" && ext != ".yml" && ext != ".json") {
				continue
			}
			path := filepath.Join(dir, e.Name())
			s, err := readCDI(path)
			if err != nil {
				return nil, err
			}
			if s.Kind == gpuKind {
				g.specs, g.files = append(g.specs, s), append(g.files, path)
			}
		}
	}
	return g, nil
}

// readCDI reads one CDI specification, YAML or JSON (which YAML reads
// too, but JSON is read as JSON so that its errors read as JSON's).
func readCDI(path string) (*cdi.Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("CDI specification: %w", err)
	}
	s := new(cdi.Spec)
	if filepath.Ext(path) == ".json" {
		err = json.Unmarshal(data, s)
	} else {
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		err = dec.Decode(s)
	}
	if err != nil {
		return nil, fmt.Errorf("CDI specification %s: %w", path, err)
	}
	if s.Kind == "" || len(s.Devices) == 0 {
		return nil, fmt.Errorf("CDI specification %s: no kind, or no devices", path)
	}
	return s, nil
}

// String says where the GPUs' edits come from, for the agent's start line.
func (g *gpuSource) String() string {
	if len(g.specs) > 0 {
		return "the CDI specification " + strings.Join(g.files, ", ")
	}
	return "the device nodes in " + g.devDir + " and the driver's libraries found (no CDI specification of " + gpuKind + ")"
}

// edits is what a container on gpus gets: each GPU's CDI device (named by
// its identifier in ids, else its index) and its specification's common
// edits; without CDI, the GPUs' device nodes, the driver's control nodes
// and its libraries, those that exist.
func (g *gpuSource) edits(gpus []contract.GPU, ids map[int]string) (edits, error) {
	if len(g.specs) == 0 {
		return g.found(gpus)
	}
	var e edits
	used := map[*cdi.Spec]bool{}
	for _, gpu := range gpus {
		names := []string{strconv.Itoa(gpu.Index)}
		if id, ok := ids[gpu.Index]; ok {
			names = append([]string{id}, names...)
		}
		spec, dev := g.device(names)
		if dev == nil {
			return edits{}, fmt.Errorf("no CDI device %s=%s in %s", gpuKind, names[0], strings.Join(g.files, ", "))
		}
		if err := e.apply(dev.ContainerEdits); err != nil {
			return edits{}, fmt.Errorf("CDI device %s=%s: %w", gpuKind, dev.Name, err)
		}
		used[spec] = true
	}
	for _, s := range g.specs {
		if used[s] {
			if err := e.apply(s.ContainerEdits); err != nil {
				return edits{}, fmt.Errorf("CDI specification of %s: %w", gpuKind, err)
			}
		}
	}
	return e, nil
}

// device finds the device of the first of names any specification has,
// the highest priority specification's.
func (g *gpuSource) device(names []string) (*cdi.Spec, *cdi.Device) {
	for _, name := range names {
		for i := len(g.specs) - 1; i >= 0; i-- {
			for j := range g.specs[i].Devices {
				if g.specs[i].Devices[j].Name == name {
					return g.specs[i], &g.specs[i].Devices[j]
				}
			}
		}
	}
	return nil, nil
}

// apply adds a CDI device's or specification's edits.
func (e *edits) apply(c cdi.ContainerEdits) error {
	for _, n := range c.DeviceNodes {
		if err := e.addNode(n.Path, n.HostPath, n.Type, n.Major, n.Minor, n.FileMode, n.UID, n.GID, n.Permissions); err != nil {
			return err
		}
	}
	for _, m := range c.Mounts {
		typ, opts := m.Type, m.Options
		if typ == "" {
			typ = "bind"
		}
		if len(opts) == 0 && typ == "bind" {
			opts = []string{"ro", "nosuid", "nodev", "rbind"}
		}
		e.mounts = append(e.mounts, specs.Mount{Destination: m.ContainerPath, Source: m.HostPath, Type: typ, Options: opts})
	}
	e.env = append(e.env, c.Env...)
	e.gids = append(e.gids, c.AdditionalGIDs...)
	for _, h := range c.Hooks {
		hook := specs.Hook{Path: h.Path, Args: h.Args, Env: h.Env, Timeout: h.Timeout}
		switch h.HookName {
		case "prestart", "createRuntime": // prestart is deprecated for createRuntime, which runs at the same point

			e.hooks.CreateRuntime = append(e.hooks.CreateRuntime, hook)
		case "createContainer":
			e.hooks.CreateContainer = append(e.hooks.CreateContainer, hook)
		case "startContainer":
			e.hooks.StartContainer = append(e.hooks.StartContainer, hook)
		case "poststart":
			e.hooks.Poststart = append(e.hooks.Poststart, hook)
		case "poststop":
			e.hooks.Poststop = append(e.hooks.Poststop, hook)
		default:
			return fmt.Errorf("hook %q: not a hook of the OCI runtime specification", h.HookName)
		}
	}
	return nil
}

// addNode adds a device node, reading what the edit leaves out (its type,
// numbers and mode) from the host's node, and the cgroup's leave to use
// it.
func (e *edits) addNode(path, hostPath, typ string, major, minor int64, mode *os.FileMode, uid, gid *uint32, perms string) error {
	if !filepath.IsAbs(path) {
		return fmt.Errorf("device node %q: not an absolute path", path)
	}
	if hostPath == "" {
		hostPath = path
	}
	if slices.ContainsFunc(e.devices, func(d specs.LinuxDevice) bool { return d.Path == path }) {
		return nil // the GPUs of one specification share their control nodes
	}
	if typ == "" || (major == 0 && minor == 0) || mode == nil {
		var st unix.Stat_t
		if err := unix.Stat(hostPath, &st); err != nil {
			return fmt.Errorf("device node %s: %w", hostPath, err)
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFCHR:
			typ = cmp.Or(typ, "c")
		case unix.S_IFBLK:
			typ = cmp.Or(typ, "b")
		default:
			return fmt.Errorf("device node %s: not a device", hostPath)
		}
		if major == 0 && minor == 0 {
			major, minor = int64(unix.Major(st.Rdev)), int64(unix.Minor(st.Rdev))
		}
		if mode == nil {
			m := os.FileMode(st.Mode & 0o777)
			mode = &m
		}
	}
	if perms == "" {
		perms = "rwm"
	}
	e.devices = append(e.devices, specs.LinuxDevice{Path: path, Type: typ, Major: major, Minor: minor, FileMode: mode, UID: uid, GID: gid})
	e.allow = append(e.allow, specs.LinuxDeviceCgroup{Allow: true, Type: typ, Major: &major, Minor: &minor, Access: perms})
	return nil
}

// controlNodes are the driver's devices every CUDA program opens, beside
// its GPUs' /dev/nvidiaN.
var controlNodes = []string{"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset"}

// driverLibs are the driver's libraries a CUDA program loads, as the
// NVIDIA Container Toolkit names them (its "utility" and "compute"
// capabilities), matched by prefix.
var driverLibs = []string{"libcuda.so", "libnvidia-ml.so", "libnvidia-ptxjitcompiler.so", "libnvidia-nvvm.so", "libcudadebugger.so", "libnvidia-gpucomp.so"}

// DriverLibDir is where a container finds the driver's libraries where
// no CDI specification says where: NVIDIA's CUDA images have it on their
// LD_LIBRARY_PATH.
const DriverLibDir = "/usr/local/nvidia/lib64"

// DefaultLibDirs are where the runner looks for the driver's libraries
// without a CDI specification: Debian's and Red Hat's places, and
// DriverLibDir, where cloud images (GKE's, and the machines this project's
// GPU tests ran on) install the driver.
var DefaultLibDirs = []string{"/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib/aarch64-linux-gnu", DriverLibDir}

// found is a container's edits without CDI: the GPUs' nodes and the
// driver's control nodes and libraries, those that exist.
func (g *gpuSource) found(gpus []contract.GPU) (edits, error) {
	var e edits
	var names []string
	for _, gpu := range gpus {
		names = append(names, "nvidia"+strconv.Itoa(gpu.Index))
	}
	for _, name := range append(names, controlNodes...) {
		host := filepath.Join(g.devDir, name)
		if _, err := os.Stat(host); err != nil {
			continue // no such device here: a machine without the driver, or a GPU it does not have
		}
		if err := e.addNode("/dev/"+name, host, "", 0, 0, nil, nil, nil, ""); err != nil {
			return edits{}, err
		}
	}
	if len(e.devices) == 0 {
		return e, nil // no driver: no libraries either
	}
	seen := map[string]bool{}
	for _, dir := range g.libDir {
		entries, _ := os.ReadDir(dir)
		for _, en := range entries {
			name := en.Name()
			if seen[name] || !slices.ContainsFunc(driverLibs, func(p string) bool { return strings.HasPrefix(name, p) }) {
				continue
			}
			seen[name] = true
			e.mounts = append(e.mounts, specs.Mount{Destination: DriverLibDir + "/" + name, Source: filepath.Join(dir, name),
				Type: "bind", Options: []string{"ro", "nosuid", "nodev", "rbind"}})
			e.libPath = DriverLibDir
		}
	}
	return e, nil
}
