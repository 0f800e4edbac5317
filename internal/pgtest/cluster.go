package pgtest

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Cluster is a PostgreSQL cluster of one test's own, made, started and
// stopped by scripts/pg.sh (start and stop, with PG_DEV_DIR a fresh
// directory), so that the test can stop the database and start it again,
// as an operator restarts it, without failing the other packages' tests,
// which share BOURSE_TEST_DATABASE_URL's server. It runs without fsync,
// like that server.
type Cluster struct {
	t   testing.TB
	dir string
	url string
}

// StartCluster makes and starts a cluster with its database "bourse",
// and deletes it when the test ends. It runs where the SQL tests run
// (URL: under scripts/pg.sh, which found or installed PostgreSQL and put
// its programs first on PATH), and skips where they skip.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	URL(t)
	// Under /tmp, short and reachable: run as root, pg.sh hands the
	// directory to the postgres user, and its socket path must be short.
	dir, err := os.MkdirTemp("/tmp", "bourse-pg-test-")
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	c := &Cluster{t: t, dir: dir}
	t.Cleanup(func() {
		if out, err := c.script("stop", "--delete"); err != nil {
			t.Errorf("pgtest: scripts/pg.sh stop --delete: %v\n%s", err, out)
			_ = os.RemoveAll(dir)
		}
	})
	c.Start()
	out, err := c.script("env")
	if err != nil {
		t.Fatalf("pgtest: scripts/pg.sh env: %v\n%s", err, out)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "export DATABASE_URL="); ok {
			c.url = strings.Trim(v, "'\"")
		}
	}
	if c.url == "" {
		t.Fatalf("pgtest: scripts/pg.sh env said no DATABASE_URL:\n%s", out)
	}
	return c
}

// URL is the cluster's database "bourse".
func (c *Cluster) URL() string { return c.url }

// Stop stops the cluster as pg_ctl's fast shutdown does: sessions are
// cut, transactions in flight roll back.
func (c *Cluster) Stop() {
	c.t.Helper()
	if out, err := c.script("stop"); err != nil {
		c.t.Fatalf("pgtest: scripts/pg.sh stop: %v\n%s", err, out)
	}
}

// Start starts the cluster (made the first time) on the port it had.
func (c *Cluster) Start() {
	c.t.Helper()
	if out, err := c.script("start"); err != nil {
		c.t.Fatalf("pgtest: scripts/pg.sh start: %v\n%s", err, out)
	}
}

// Log is the server's log, for a failing test to show.
func (c *Cluster) Log() string {
	out, _ := os.ReadFile(filepath.Join(c.dir, "postgres.log"))
	return string(out)
}

func (c *Cluster) script(args ...string) ([]byte, error) {
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "..", "scripts", "pg.sh")
	cmd := exec.Command("bash", append([]string{script}, args...)...)
	cmd.Env = append(os.Environ(), "PG_DEV_DIR="+c.dir, "PG_DURABLE=0")
	return cmd.CombinedOutput()
}
