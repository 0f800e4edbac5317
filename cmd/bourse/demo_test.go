package main

import (
	"bytes"
	"context"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestDemo runs the README's first command briefly, with a person
// trading as you beside the bots: it must trade, settle and end with a
// passing audit line, say what cyd's cap and the allowances (paid every 5
// seconds, to every bot) did, and what you traded.
func TestDemo(t *testing.T) {
	var stdout, stderr lockedBuffer
	done := make(chan int, 1)
	go func() { done <- run(context.Background(), []string{"demo", "--duration", "6s"}, &stdout, &stderr) }()
	var url string
	for url == "" {
		if m := regexp.MustCompile(`NATS at (\S+) `).FindStringSubmatch(stdout.String()); m != nil {
			url = m[1]
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The bots keep the servers busy: an offer may be countered or
	// rejected, and you offer again, as a person would.
	for try := 0; ; try++ {
		var bidOut, bidErr bytes.Buffer
		code := run(context.Background(), []string{"bid", "--nats", url, "--id", "you", "offer", "--gpus", "1",
			"--price", "0.60", "--duration", "1s", "--time-limit", "1m"}, &bidOut, &bidErr)
		if code == 0 {
			break
		}
		if code != exitRefused || try == 20 {
			t.Fatalf("you could not trade: %d %s%s", code, bidOut.String(), bidErr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code := <-done; code != 0 {
		t.Fatalf("exit status %d; stderr %q\n%s", code, stderr.String(), stdout.String())
	}
	out := strings.TrimSpace(stdout.String())
	lines := strings.Split(out, "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "audit: ") || !strings.HasSuffix(last, "(0 open): pass") {
		t.Errorf("the last line is %q, want the audit passing with no hold open", last)
	}
	for _, want := range []string{"Settlement summary", "SERVER", "CLIENT", "contracts settled",
		"cap: cyd may hold 2 GPUs at once", "allowance: bea: dx/dt = a − b·x with a = 1200/h, b = 120/h (tends to a/b = 10.00)",
		"allowance: ada: dx/dt = a − b·x with a = 3600/h, b = 120/h (tends to a/b = 30.00)"} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
	// Every bot has an allowance; one that has spent nothing yet is owed
	// nothing, so only bea's, which starts above its target, must have
	// moved money in 6 s.
	for _, bot := range []string{"ada", "bea", "cyd", "dov", "eli", "fen", "gus", "hal"} {
		if !regexp.MustCompile(`allowance: ` + bot + `: dx/dt = a − b·x with a = \d+/h, b = 120/h`).MatchString(out) {
			t.Errorf("%s has no allowance:\n%s", bot, out)
		}
	}
	if !regexp.MustCompile(`allowance: bea: .* in [1-9]\d* payments`).MatchString(out) {
		t.Errorf("bea's allowance was not paid in 6 s:\n%s", out)
	}
	// you's line: what its contract charged and refunded, read from the
	// store, not dashes.
	if !regexp.MustCompile(`(?m)^you +bourse bid +- +\d+\.\d\d +0\.00 +0\.[1-9]\d +[1-9]\d\.\d\d +1 +1$`).MatchString(out) {
		t.Errorf("the summary does not say what you traded:\n%s", out)
	}
	if m := regexp.MustCompile(`spend cap: gus may commit 10.00 a day; (\d+\.\d\d) used`).FindStringSubmatch(out); m == nil || m[1] == "0.00" {
		t.Errorf("gus's spend cap is not in the summary, or nothing was used of it:\n%s", out)
	} else if used, _ := strconv.ParseFloat(m[1], 64); used > 10 {
		t.Errorf("gus used %s of a daily cap of 10.00", m[1])
	}
	if !regexp.MustCompile(`(?m)^atlas +learning +8× H100 +\d+`).MatchString(out) {
		t.Errorf("atlas does not learn its price:\n%s", out)
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
		{"ExchangeNeedsDB", []string{"exchange"}, exitUsage, `bourse: --db (or $DATABASE_URL) is required: the ledger's postgres:// URL, or mem for a throwaway one`},
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

// TestDemoConsoleAddress: a console address the demo cannot serve (a
// port in use, or one off loopback, which it refuses without TLS) fails
// at once, as a bad value, before the admin password is printed and
// before the market trades.
func TestDemoConsoleAddress(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, tt := range []struct{ name, addr, want string }{
		{"InUse", taken.Addr().String(), "address already in use"},
		{"OffLoopback", "0.0.0.0:0", "the demo's console serves plain HTTP, so only on loopback"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{"demo", "--console", tt.addr}, &stdout, &stderr)
			if code != exitUsage {
				t.Errorf("exit status %d, want %d", code, exitUsage)
			}
			if want := "bourse: --console " + tt.addr + ": "; !strings.HasPrefix(stderr.String(), want) || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr %q, want it to start %q and say %q", stderr.String(), want, tt.want)
			}
			if stdout.Len() != 0 {
				t.Errorf("the demo began before it failed:\n%s", stdout.String())
			}
		})
	}
}

// TestDemoQuiet: --quiet prints how to trade at the start and the
// summary at the end, and no progress line between.
func TestDemoQuiet(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"demo", "--duration", "6s", "--quiet"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit status %d: %s", code, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"Trade yourself as client you", "Settlement summary", "audit: "} {
		if !strings.Contains(out, want) {
			t.Errorf("the quiet demo does not say %q:\n%s", want, out)
		}
	}
	if regexp.MustCompile(`(?m)^ *\d+\.\ds  \d+ offers`).MatchString(out) {
		t.Errorf("the quiet demo printed progress:\n%s", out)
	}
}
