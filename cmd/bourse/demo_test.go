package main

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestDemo runs the README's first command briefly: it must trade, settle
// and end with a passing audit line, and say what cyd's cap and bea's
// allowance (paid every 5 seconds) did.
func TestDemo(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"demo", "--duration", "6s"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit status %d; stderr %q\n%s", code, stderr.String(), stdout.String())
	}
	out := strings.TrimSpace(stdout.String())
	lines := strings.Split(out, "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "audit: ") || !strings.HasSuffix(last, "(0 open): pass") {
		t.Errorf("the last line is %q, want the audit passing with no hold open", last)
	}
	for _, want := range []string{"Settlement summary", "SERVER", "CLIENT", "contracts settled",
		"cap: cyd may hold 2 GPUs at once", "allowance: bea: dx/dt = a − b·x with a = 360/h, b = 36/h (tends to a/b = 10.00)"} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
	if !regexp.MustCompile(`allowance: bea: .* in [1-9]\d* payments`).MatchString(out) {
		t.Errorf("bea's allowance was not paid in 6 s:\n%s", out)
	}
	if m := regexp.MustCompile(`spend cap: gus may commit 10.00 a day; (\d+\.\d\d) used`).FindStringSubmatch(out); m == nil || m[1] == "0.00" {
		t.Errorf("gus's spend cap is not in the summary, or nothing was used of it:\n%s", out)
	} else if used, _ := strconv.ParseFloat(m[1], 64); used > 10 {
		t.Errorf("gus used %s of a daily cap of 10.00", m[1])
	}
	if !regexp.MustCompile(`treasury: [1-9]\d* administrative actions in the audit trail`).MatchString(out) {
		t.Errorf("the treasury's audit trail is not in the summary:\n%s", out)
	}
}

func TestCommandErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"DemoBadDuration", []string{"demo", "--duration", "-1s"}, exitUsage, "bourse: --duration must be positive, got -1s"},
		{"DemoBadDB", []string{"demo", "--db", "mysql://x"}, exitUsage, `bourse: --db must be a postgres:// URL (PostgreSQL or CockroachDB) or "mem", got "mysql://x"`},
		{"ExchangeNeedsDB", []string{"exchange"}, exitUsage, `bourse: --db (or $DATABASE_URL) is required: the ledger's postgres:// URL`},
		{"AdminNeedsDB", []string{"admin", "audit"}, exitUsage, `bourse: --db (or $DATABASE_URL) is required: the ledger's postgres:// URL`},
		{"AdminRefusesMem", []string{"admin", "audit", "--db", "mem"}, exitUsage, `bourse: admin needs the exchange's database: an in-memory ledger ("mem") lives only inside its own process`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("DATABASE_URL", "") // scripts/pg.sh sets it
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), tt.args, &stdout, &stderr); code != tt.code {
				t.Fatalf("exit status %d, want %d", code, tt.code)
			}
			first := strings.SplitN(stderr.String(), "\n", 2)[0]
			if tt.want != "" && first != tt.want {
				t.Errorf("stderr %q, want %q", first, tt.want)
			}
		})
	}
}
