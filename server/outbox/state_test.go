package outbox_test

import (
	"testing"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/server/outbox"
)

// TestStateFiles: a state file saved in the outbox's directory is there
// for the next Outbox on it, replaced whole; it cannot take the name of
// the outbox's own files.
func TestStateFiles(t *testing.T) {
	dir := t.TempDir()
	o := open(t, outbox.Config{Dir: dir})
	if data, err := o.LoadFile("bookings.json"); data != nil || err != nil {
		t.Fatalf("LoadFile of none = %q, %v", data, err)
	}
	for _, v := range []string{`[1]`, `[2]`} {
		if err := o.SaveFile("bookings.json", []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"readings.log", "lock", "../x", ""} {
		if err := o.SaveFile(name, []byte("x")); bourse.ErrorCode(err) != bourse.EInvalid {
			t.Errorf("SaveFile(%q) = %v, want invalid", name, err)
		}
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	again := open(t, outbox.Config{Dir: dir})
	if data, err := again.LoadFile("bookings.json"); string(data) != `[2]` || err != nil {
		t.Errorf("after a reopen: %q, %v; want the last save", data, err)
	}
	if again.Len() != 0 {
		t.Errorf("the state file was read as readings: %d pending", again.Len())
	}
}
