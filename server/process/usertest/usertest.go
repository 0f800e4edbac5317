// Package usertest makes Unix users for tests of jobs that run as users
// of their own (process.Config.Users), and removes them after.
//
// Only root can make users. A test that needs them skips where it cannot,
// and says why, except in CI (CI=true), which runs as root: there it
// fails, so that the isolation it tests is never left untested.
package usertest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Need skips the test, or fails it in CI, where users cannot be made.
func Need(t testing.TB) {
	t.Helper()
	if os.Geteuid() == 0 {
		if _, err := exec.LookPath("useradd"); err == nil {
			return
		}
	}
	why := "not root: cannot create the job users (useradd) this part needs"
	if os.Geteuid() == 0 {
		why = "no useradd: cannot create the job users this part needs"
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s; CI must run it as root", why)
	}
	t.Skip(why)
}

// Create makes n users with a group each, no home and no login shell,
// named with a random prefix so that tests running at once do not meet,
// and removes them when the test ends.
func Create(t testing.TB, n int) []string {
	t.Helper()
	Need(t)
	var b [3]byte
	_, _ = rand.Read(b[:])
	prefix := "bjt" + hex.EncodeToString(b[:]) + "-"
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s%d", prefix, i)
		if err := retry("useradd", "--system", "--no-create-home", "--user-group", "--shell", "/usr/sbin/nologin", names[i]); err != nil {
			t.Fatalf("useradd %s: %v", names[i], err)
		}
		name := names[i]
		t.Cleanup(func() {
			if err := retry("userdel", name); err != nil {
				t.Errorf("userdel %s: %v", name, err)
			}
		})
	}
	return names
}

// retry runs a command of the shadow suite, which fails while another
// holds the lock on /etc/passwd (tests of other packages may be making
// users at the same time).
func retry(name string, args ...string) error {
	var err error
	for range 50 {
		var out []byte
		if out, err = exec.Command(name, args...).CombinedOutput(); err == nil {
			return nil
		}
		if !strings.Contains(string(out), "lock") {
			return fmt.Errorf("%w: %s", err, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

// Dir makes a directory every user may enter (mode 0755), removed when the
// test ends: t.TempDir's are the test's user's alone, and a job's user must
// reach its program and its output folder.
func Dir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "bourse-usertest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Executable copies the running test binary into a Dir, where other users
// may run it, and returns its path.
func Executable(t testing.TB) string {
	t.Helper()
	src, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	path := filepath.Join(Dir(t), filepath.Base(os.Args[0]))
	dst, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o755); err != nil { // whatever the umask
		t.Fatal(err)
	}
	return path
}
