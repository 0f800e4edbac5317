package container

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// state is a runner's folder under the state directory, <pid>-<n>: the
// runtime's state (runtime/) and a bundle per container (bundles/<id>/:
// config.json, and rootfs, the overlay of the image's root file system
// with upper/ and work/ beneath it). Its name says whose it is, so that
// a runner finds and removes those of agents no longer running.
type state struct {
	dir     string
	runtime string // the runtime's path, to delete what it left
	log     *slog.Logger
}

// bundle is one container's bundle.
type bundle struct {
	dir, rootfs string
}

var stateSeq atomic.Int64

// staleState matches a runner's state folder.
var staleState = regexp.MustCompile(`^([0-9]+)-[0-9]+$`)

// openState makes the runner's state folder in base (its default where
// empty), after removing those of runners no longer running.
func openState(base, runtime string, log *slog.Logger) (*state, error) {
	if base == "" {
		base = filepath.Join(os.TempDir(), "bourse-containers")
		if fi, err := os.Stat("/run"); err == nil && fi.IsDir() {
			base = "/run/bourse-containers"
		}
	}
	if err := os.MkdirAll(base, 0o700); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(base)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		m := staleState.FindStringSubmatch(e.Name())
		if m == nil || !e.IsDir() {
			continue
		}
		if _, err := os.Stat("/proc/" + m[1]); err == nil {
			continue // its runner's agent runs (or another process has its pid: leave it)
		}
		old := &state{dir: filepath.Join(base, e.Name()), runtime: runtime, log: log}
		log.Warn("removing the containers' state of an agent no longer running", "state", old.dir)
		old.close()
	}
	s := &state{dir: filepath.Join(base, fmt.Sprintf("%d-%d", os.Getpid(), stateSeq.Add(1))), runtime: runtime, log: log}
	for _, d := range []string{s.runtimeRoot(), filepath.Join(s.dir, "bundles")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// runtimeRoot is the runtime's --root.
func (s *state) runtimeRoot() string { return filepath.Join(s.dir, "runtime") }

// bundle makes a container's bundle: its root, the image's root file
// system beneath an overlay of its own (the runtime makes its mount
// points in the upper layer, so that the image, which other containers
// share, is never written), and config.json.
func (s *state) bundle(id, image string, spec *specs.Spec) (*bundle, error) {
	if strings.ContainsAny(image, ",:\\") || !filepath.IsAbs(image) {
		return nil, fmt.Errorf("the image's root file system %q: want an absolute path without , : or \\ (overlay options)", image)
	}
	b := &bundle{dir: filepath.Join(s.dir, "bundles", id)}
	b.rootfs = filepath.Join(b.dir, "rootfs")
	upper, work := filepath.Join(b.dir, "upper"), filepath.Join(b.dir, "work")
	for _, d := range []string{b.rootfs, upper, work} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	// The overlay's root is the upper layer's folder: it must be the
	// image's root as the image has it, or the job's user could not
	// enter it.
	var st unix.Stat_t
	if err := unix.Stat(image, &st); err != nil {
		_ = os.RemoveAll(b.dir)
		return nil, fmt.Errorf("the image's root file system: %w", err)
	}
	if err := errors.Join(unix.Chmod(upper, st.Mode&0o7777), os.Lchown(upper, int(st.Uid), int(st.Gid))); err != nil {
		_ = os.RemoveAll(b.dir)
		return nil, err
	}
	opts := "lowerdir=" + image + ",upperdir=" + upper + ",workdir=" + work
	if err := unix.Mount("overlay", b.rootfs, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		_ = os.RemoveAll(b.dir)
		return nil, fmt.Errorf("the container's root (overlay of %s): %w", image, err)
	}
	// The runtime gives a tmpfs the mode of the folder it covers, and an
	// image's /tmp may be missing or closed: make it the sticky, open
	// folder a job expects, in this container's upper layer alone.
	if err := openTmp(b.rootfs); err != nil {
		s.remove(id, b)
		return nil, fmt.Errorf("the container's /tmp: %w", err)
	}
	data, err := json.MarshalIndent(spec, "", "\t")
	if err == nil {
		err = os.WriteFile(filepath.Join(b.dir, "config.json"), data, 0o600)
	}
	if err != nil {
		s.remove(id, b)
		return nil, err
	}
	return b, nil
}

// openTmp makes rootfs's /tmp a folder of mode 1777, unless the image
// has something else there (a link, which the runtime resolves in the
// root).
func openTmp(rootfs string) error {
	tmp := filepath.Join(rootfs, "tmp")
	fi, err := os.Lstat(tmp)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.Mkdir(tmp, 0o700); err != nil {
			return err
		}
	case err != nil:
		return err
	case !fi.IsDir():
		return nil
	}
	return unix.Chmod(tmp, 0o1777)
}

// remove deletes the container id, whatever is left of it (the runtime
// deletes a container it ran in the foreground once it exits; not one it
// was killed before), and its bundle.
func (s *state) remove(id string, b *bundle) {
	out, err := exec.Command(s.runtime, "--root", s.runtimeRoot(), "delete", "--force", id).CombinedOutput()
	if err != nil && !strings.Contains(string(out), "does not exist") && !strings.Contains(string(out), "not exist") {
		s.log.Warn("delete the container", "container", id, "err", err, "output", strings.TrimSpace(string(out)))
	}
	if b == nil {
		return
	}
	if err := unix.Unmount(b.rootfs, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		s.log.Warn("unmount the container's root", "rootfs", b.rootfs, "err", err)
	}
	if err := os.RemoveAll(b.dir); err != nil {
		s.log.Warn("remove the container's bundle", "bundle", b.dir, "err", err)
	}
}

// close deletes every container and bundle left in the state folder, and
// the folder.
func (s *state) close() {
	bundles, _ := os.ReadDir(filepath.Join(s.dir, "bundles"))
	for _, e := range bundles {
		dir := filepath.Join(s.dir, "bundles", e.Name())
		s.remove(e.Name(), &bundle{dir: dir, rootfs: filepath.Join(dir, "rootfs")})
	}
	left, _ := os.ReadDir(s.runtimeRoot())
	for _, e := range left {
		s.remove(e.Name(), nil)
	}
	if err := os.RemoveAll(s.dir); err != nil {
		s.log.Warn("remove the containers' state", "state", s.dir, "err", err)
	}
}
