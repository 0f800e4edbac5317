// Package scripts_test checks the shell scripts that make test runs, with
// stand-ins for the system commands they call.
package scripts_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeAptGet is an apt-get that logs its arguments, holds the package
// lists' lock for its first $LOCKED updates (as another apt-get would),
// and knows the package only once the lists are updated.
const fakeAptGet = `#!/usr/bin/env bash
echo "$*" >>"$FAKE/calls"
case " $* " in
*" update "*)
	n=$(cat "$FAKE/updates" 2>/dev/null || echo 0); echo $((n + 1)) >"$FAKE/updates"
	if [ "$n" -lt "$LOCKED" ]; then
		echo "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 1 (apt-get)" >&2; exit 100
	fi
	[ -z "$UPDATE_FAILS" ] || { echo "E: $UPDATE_FAILS" >&2; exit 100; }
	touch "$FAKE/lists";;
*" install "*)
	[ -e "$FAKE/lists" ] || { echo "E: Unable to locate package $*" >&2; exit 100; };;
esac
`

func TestAptInstall(t *testing.T) {
	for _, tt := range []struct {
		name        string
		locked      string // updates refused for the lists' lock
		updateFails string
		timeout     string
		ok          bool
		updates     int
	}{
		{name: "WaitsForTheListsLock", locked: "2", timeout: "60", ok: true, updates: 3},
		{name: "GivesUpAtTheDeadline", locked: "1000", timeout: "3", ok: false, updates: 2}, // retried, then gave up: how many retries fit in 3 s depends on the machine
		{name: "OtherErrorsFailAtOnce", locked: "0", updateFails: "The repository is not signed", timeout: "60", ok: false, updates: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fake := t.TempDir()
			if err := os.WriteFile(filepath.Join(fake, "apt-get"), []byte(fakeAptGet), 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("bash", "apt-install.sh", "nats-server")
			cmd.Env = append(os.Environ(), "PATH="+fake+":"+os.Getenv("PATH"), "FAKE="+fake,
				"LOCKED="+tt.locked, "UPDATE_FAILS="+tt.updateFails, "APT_LOCK_TIMEOUT="+tt.timeout)
			start := time.Now()
			out, err := cmd.CombinedOutput()
			if (err == nil) != tt.ok {
				t.Fatalf("apt-install.sh: %v, want success %v\n%s", err, tt.ok, out)
			}
			calls, _ := os.ReadFile(filepath.Join(fake, "calls"))
			lines := strings.Split(strings.TrimSpace(string(calls)), "\n")
			updates := 0
			for _, l := range lines {
				if !strings.HasPrefix(l, "-o DPkg::Lock::Timeout="+tt.timeout+" ") {
					t.Errorf("apt-get %s: not told to wait for dpkg's lock", l)
				}
				if strings.Contains(l, " update") {
					updates++
				}
			}
			if updates < tt.updates || (tt.ok && updates != tt.updates) {
				t.Errorf("%d updates, want %d:\n%s\n%s", updates, tt.updates, calls, out)
			}
			if tt.ok && lines[len(lines)-1] != "-o DPkg::Lock::Timeout=60 install -y -q --no-install-recommends nats-server" {
				t.Errorf("the last call is %q, want the install", lines[len(lines)-1])
			}
			if !tt.ok && tt.locked == "1000" && time.Since(start) > 20*time.Second {
				t.Errorf("gave up after %s, past its 3 s deadline", time.Since(start))
			}
		})
	}
}
