package main

import (
	"errors"
	"maps"
	"testing"
)

// TestExportVars: --export's NAME=VALUE and NAME (from this shell), and
// what it refuses; nothing of the shell goes unnamed.
func TestExportVars(t *testing.T) {
	here := map[string]string{"HOME": "/home/ada", "EMPTY": ""}
	lookup := func(k string) (string, bool) { v, ok := here[k]; return v, ok }
	env, err := exportVars([]string{"A=1", "B=x=y", "C=", "HOME", "EMPTY"}, lookup)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"A": "1", "B": "x=y", "C": "", "HOME": "/home/ada", "EMPTY": ""}
	if !maps.Equal(env, want) {
		t.Errorf("env %v, want %v", env, want)
	}
	if env, err := exportVars(nil, lookup); env != nil || err != nil {
		t.Errorf("no --export: %v, %v; want no variables", env, err)
	}
	for _, bad := range [][]string{{"=1"}, {"NOPE"}, {"A=1", "A=2"}, {"A=\x00"}} {
		if _, err := exportVars(bad, lookup); !errors.As(err, new(*usageError)) {
			t.Errorf("--export %q: %v, want a usage error", bad, err)
		}
	}
}
