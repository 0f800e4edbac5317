package process

import "testing"

func TestParseStat(t *testing.T) {
	for _, tt := range []struct {
		stat  string
		state byte
		pgid  int
		ok    bool
	}{
		{"1234 (python3) S 1 1234 1234 0 -1", 'S', 1234, true},
		{"1235 (a (b) c) R 1234 1234 1200 0", 'R', 1234, true},
		{"1236 (x) Z", 0, 0, false},
		{"garbage", 0, 0, false},
	} {
		state, pgid, err := parseStat(tt.stat)
		if (err == nil) != tt.ok || (tt.ok && (pgid != tt.pgid || state != tt.state)) {
			t.Errorf("parseStat(%q) = %c, %d, %v; want %c, %d, ok=%v", tt.stat, state, pgid, err, tt.state, tt.pgid, tt.ok)
		}
	}
}

func TestParseProc(t *testing.T) {
	var uids [4]int
	if !parseUIDs("Name:\tsleep\nUid:\t1001\t1002\t1003\t1004\nGid:\t5\t5\t5\t5\n", &uids) || uids != [4]int{1001, 1002, 1003, 1004} {
		t.Errorf("parseUIDs: %v", uids)
	}
	if parseUIDs("Name:\tsleep\n", &uids) {
		t.Error("parseUIDs found a Uid line in a status without one")
	}
	if got := parseCgroup("4:memory:/x\n0::/bourse-1-1/job-c1\n"); got != "/bourse-1-1/job-c1" {
		t.Errorf("parseCgroup = %q", got)
	}
	if got := parseCgroup("4:memory:/x\n"); got != "" {
		t.Errorf("parseCgroup of cgroup v1 alone = %q", got)
	}
	if got := unescapeMount(`/sys/fs/cgroup\040x`); got != "/sys/fs/cgroup x" {
		t.Errorf("unescapeMount = %q", got)
	}
	g := &cgroup{rel: "/a/job-c1"}
	for rel, want := range map[string]bool{"/a/job-c1": true, "/a/job-c1/sub": true, "/a/job-c10": false, "/a": false} {
		if g.holds(rel) != want {
			t.Errorf("holds(%q) = %v", rel, !want)
		}
	}
}
