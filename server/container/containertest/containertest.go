// Package containertest gives tests of the container runner what they
// need to run containers for real: a check that they can, and an image's
// root file system built from Debian's busybox-static.
//
// Containers need root and runc. A test that needs them skips where they
// are missing, saying what is missing, except in CI (CI=true), where it
// fails, so that the containment it tests is never left untested: make
// test installs runc and busybox-static (scripts/runc.sh).
package containertest

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Need skips the test, or fails it in CI, where containers cannot run:
// not root, no runc, no static busybox.
func Need(t testing.TB) {
	t.Helper()
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, fmt.Sprintf("root (this runs as uid %d; containers need root)", os.Geteuid()))
	}
	if _, err := exec.LookPath("runc"); err != nil {
		missing = append(missing, "runc (apt-get install runc)")
	}
	if _, err := busybox(); err != nil {
		missing = append(missing, err.Error())
	}
	if len(missing) == 0 {
		return
	}
	why := "cannot run containers: no " + strings.Join(missing, ", no ")
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s; CI must run it as root with them installed (make test does: scripts/runc.sh)", why)
	}
	t.Skip(why)
}

// busybox finds a static busybox, which runs in a root of its own.
func busybox() (string, error) {
	path, err := exec.LookPath("busybox")
	if err != nil {
		return "", errors.New("busybox (apt-get install busybox-static)")
	}
	f, err := elf.Open(path)
	if err != nil {
		return "", fmt.Errorf("busybox readable as ELF at %s: %v", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return "", fmt.Errorf("static busybox (%s is linked dynamically: apt-get install busybox-static)", path)
		}
	}
	return path, nil
}

// Applets are the busybox commands in the root's /bin.
var Applets = []string{"sh", "id", "cat", "ls", "sleep", "nc", "echo", "awk", "seq", "touch", "grep", "wc",
	"mkdir", "unshare", "true", "env", "pwd", "head", "test", "["}

// Root builds an unpacked image's root file system in a folder of the
// test's and returns it: busybox and its Applets in /bin, an /etc/passwd
// that names root alone, every folder 0755 and owned by root as an
// image's, and /var/data, a folder any user may write (as an app's data
// folder), so that only a read-only root keeps a job out of it.
func Root(t testing.TB) string {
	t.Helper()
	Need(t)
	bb, err := busybox()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(t.TempDir(), "rootfs")
	for _, d := range []string{"bin", "etc", "proc", "sys", "dev", "tmp", "var/data"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(bb)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "bin", "busybox"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, a := range Applets {
		if err := os.Symlink("busybox", filepath.Join(root, "bin", a)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "etc", "passwd"), []byte("root:x:0:0:root:/root:/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Whatever the umask (the runner's is 077): t.TempDir is 0700.
	err = filepath.WalkDir(filepath.Dir(root), func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		return os.Chmod(p, 0o755)
	})
	if err == nil {
		err = errors.Join(os.Chmod(filepath.Join(root, "bin", "busybox"), 0o755), os.Chmod(filepath.Join(root, "etc", "passwd"), 0o644),
			os.Chmod(filepath.Join(root, "var", "data"), 0o777))
	}
	if err != nil {
		t.Fatal(err)
	}
	return root
}
