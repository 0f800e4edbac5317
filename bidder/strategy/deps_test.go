package strategy

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLinksNoNATS keeps the package free of NATS, so that the simulator
// runs the same strategies and negotiation without it: nothing it imports,
// directly or not, may come from a github.com/nats-io module.
func TestLinksNoNATS(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH:", err)
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}} {{with .Module}}{{.Path}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 2 {
		t.Fatalf("go list -deps listed %q: too little to be this package's dependencies", out)
	}
	for _, line := range lines {
		if strings.Contains(line, "github.com/nats-io/") {
			t.Errorf("links %s", line)
		}
	}
}
