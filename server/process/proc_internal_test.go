package process

import "testing"

func TestStatPGID(t *testing.T) {
	for _, tt := range []struct {
		stat string
		pgid int
		ok   bool
	}{
		{"1234 (python3) S 1 1234 1234 0 -1", 1234, true},
		{"1235 (a (b) c) R 1234 1234 1200 0", 1234, true},
		{"1236 (x) Z", 0, false},
		{"garbage", 0, false},
	} {
		pgid, err := statPGID(tt.stat)
		if (err == nil) != tt.ok || pgid != tt.pgid {
			t.Errorf("statPGID(%q) = %d, %v; want %d, ok=%v", tt.stat, pgid, err, tt.pgid, tt.ok)
		}
	}
}
