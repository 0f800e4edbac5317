package scripts_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/bourse/bourse/internal/pgtest"
)

// TestPGDevCluster runs the development cluster's life: start makes it,
// env says where it is, a table written survives stop and start, and stop
// --delete removes it.
func TestPGDevCluster(t *testing.T) {
	pgtest.URL(t) // skips where the SQL tests do: no PostgreSQL here
	dir := fmt.Sprintf("/tmp/bourse-pg-dev-test-%08x", rand.Uint32())
	pg := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("bash", append([]string{"pg.sh"}, args...)...)
		cmd.Env = append(os.Environ(), "PG_DEV_DIR="+dir)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("pg.sh %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	t.Cleanup(func() {
		cmd := exec.Command("bash", "pg.sh", "stop", "--delete")
		cmd.Env = append(os.Environ(), "PG_DEV_DIR="+dir)
		_ = cmd.Run()
	})
	url := func() string {
		t.Helper()
		m := regexp.MustCompile(`(?m)^export DATABASE_URL='(postgres://[^']+)'$`).FindStringSubmatch(pg("env"))
		if m == nil {
			t.Fatal("pg.sh env printed no DATABASE_URL")
		}
		return m[1]
	}
	ctx := context.Background()
	// query runs sql on u and scans its one number: SELECT x FROM kept
	// after CREATE TABLE kept AS SELECT 42 AS x, say.
	query := func(u string, sql ...string) (int, error) {
		conn, err := pgx.Connect(ctx, u)
		if err != nil {
			return 0, err
		}
		defer conn.Close(ctx)
		for _, q := range sql[:len(sql)-1] {
			if _, err := conn.Exec(ctx, q); err != nil {
				return 0, err
			}
		}
		var n int
		return n, conn.QueryRow(ctx, sql[len(sql)-1]).Scan(&n)
	}

	pg("start")
	first := url()
	if _, err := query(first, "CREATE TABLE kept AS SELECT 42 AS x", "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	pg("start") // running already: nothing to do
	pg("stop")
	if _, err := query(first, "SELECT 1"); err == nil {
		t.Fatal("the cluster answers after stop")
	}
	pg("start")
	n, err := query(url(), "SELECT x FROM kept")
	if err != nil || n != 42 {
		t.Fatalf("after a restart: %d, %v; want the row written before", n, err)
	}
	pg("stop", "--delete")
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("stop --delete left %s: %v", dir, err)
	}
}
