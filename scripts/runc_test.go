package scripts_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRuncScript: runc.sh installs what the container tests lack (runc, a
// static busybox), as root through apt-install.sh, and nothing where
// both are there; as another user it says what to install and exits 0.
func TestRuncScript(t *testing.T) {
	// bin holds what every case has: bash and the tools runc.sh reads a
	// binary with, and no runc or busybox but the case's own.
	bin := t.TempDir()
	for _, tool := range []string{"bash", "id", "grep", "readelf", "file", "dirname", "cat", "touch"} {
		if path, err := exec.LookPath(tool); err == nil {
			if err := os.Symlink(path, filepath.Join(bin, tool)); err != nil {
				t.Fatal(err)
			}
		}
	}
	staticBin := filepath.Join(t.TempDir(), "static")
	if err := os.WriteFile(staticBin, []byte("#!/bin/true\n"), 0o755); err != nil { // no ELF interpreter: static to readelf
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		have    []string // runc, busybox
		install string   // the packages apt-get is asked for, "" for none
	}{
		{"BothThere", []string{"runc", "busybox"}, ""},
		{"NoRunc", []string{"busybox"}, "runc"},
		{"Nothing", nil, "runc busybox-static"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fake := t.TempDir()
			if err := os.WriteFile(filepath.Join(fake, "apt-get"), []byte(fakeAptGet), 0o755); err != nil {
				t.Fatal(err)
			}
			for _, h := range tt.have {
				if err := os.Symlink(staticBin, filepath.Join(fake, h)); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command(filepath.Join(bin, "bash"), "runc.sh")
			cmd.Env = []string{"PATH=" + fake + ":" + bin, "FAKE=" + fake, "LOCKED=0", "APT_LOCK_TIMEOUT=5"}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("runc.sh: %v\n%s", err, out)
			}
			calls, _ := os.ReadFile(filepath.Join(fake, "calls"))
			switch {
			case tt.install == "" && len(calls) > 0:
				t.Errorf("apt-get was called: %s", calls)
			case tt.install != "" && os.Geteuid() == 0 && !strings.HasSuffix(strings.TrimSpace(string(calls)), "install -y -q --no-install-recommends "+tt.install):
				t.Errorf("apt-get calls %q, want the install of %s\n%s", calls, tt.install, out)
			case tt.install != "" && os.Geteuid() != 0 && !strings.Contains(string(out), "sudo apt-get install "+tt.install):
				t.Errorf("as a user it says %q, want how to install %s", out, tt.install)
			}
		})
	}
}
