package treasury

import "testing"

func TestChanges(t *testing.T) {
	a := Action{
		Before: map[string]string{"wallet/CRED/alice": "100", "cap": "4", "in_use": "2", "same": "1"},
		After:  map[string]string{"wallet/CRED/alice": "80", "cap": "4", "rate": "0.5", "same": "1"},
	}
	want := "in_use: 2 → none; rate: 0.5; wallet/CRED/alice: 100 → 80"
	if got := a.Changes(); got != want {
		t.Errorf("Changes() = %q, want %q", got, want)
	}
	if got := (Action{}).Changes(); got != "" {
		t.Errorf("an action that changed nothing: %q", got)
	}
}
