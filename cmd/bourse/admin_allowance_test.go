package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/internal/pgtest"
	"github.com/bourse/bourse/treasury"
)

// TestAdminAllowance: a rules file's allowance paid from the command line
// on PostgreSQL, each period once however often the run is repeated.
func TestAdminAllowance(t *testing.T) {
	db := pgtest.FreshDB(t)
	ok := adminOK(t, db)
	ok("currency", "CRED", "--scale", "2")
	ok("open", "ada", "--currency", "CRED")
	rules := filepath.Join(t.TempDir(), "allowances.yaml")
	require.NoError(t, os.WriteFile(rules, []byte(`allowances:
  - {wallet: ada, currency: CRED, a: "10", b: "0.1", period: 1h, start: 2026-01-01T00:00:00Z}
`), 0o644))

	out := ok("allowance", "run", "--rules", rules, "--now", "2026-01-01T03:30:00Z")
	assert.Regexp(t, `(?m)^wallet/CRED/ada +1 +9\.52 +allowance/wallet/CRED/ada/v1/1$`, out, "100·(1 − e^−0.1)")
	assert.Regexp(t, `(?m)^wallet/CRED/ada +3 `, out)
	assert.NotRegexp(t, `(?m)^wallet/CRED/ada +4 `, out, "period 4 has not ended")
	assert.Equal(t, "nothing due: every period that has ended is paid\n", ok("allowance", "run", "--rules", rules, "--now", "2026-01-01T03:59:00Z"))
	assert.Contains(t, ok("balance", "wallet/CRED/ada"), "25.92", "100·(1 − e^−0.3)")

	bad := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("allowances:\n  - {wallet: ada, currency: CRED, a: \"-1\", start: 2026-01-01T00:00:00Z}\n"), 0o644))
	_, errOut, code := bourseCmd("admin", "--db", "postgres://nobody@127.0.0.1:1/none", "allowance", "run", "--rules", bad)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "allowances[0]")
	assert.Contains(t, errOut, "a is negative", "the rules are checked before the database is reached")
}

func TestAllowanceRulesOneAWallet(t *testing.T) {
	f := filepath.Join(t.TempDir(), "twice.yaml")
	require.NoError(t, os.WriteFile(f, []byte(`allowances:
  - {wallet: ada, currency: CRED, a: "1", start: 2026-01-01T00:00:00Z}
  - {wallet: ada, currency: CRED, a: "2", start: 2026-01-01T00:00:00Z}
`), 0o644))
	_, err := readAllowances(f)
	assert.ErrorContains(t, err, "wallet/CRED/ada has an allowance already")
}

// TestAllowancesOneTruth: bourse admin allowance --help, the console
// (console.TestAllowancesSayWhenPaid) and docs/operations.md say alike
// when and where allowances are paid: every --schedule-every by each
// exchange, on the wallet's statement.
func TestAllowancesOneTruth(t *testing.T) {
	out := execute(t, nil, "admin", "allowance", "--help")
	assert.Contains(t, strings.Join(strings.Fields(out), " "), treasury.AllowancesPaid)
	doc := strings.Join(strings.Fields(readFile(t, "../../docs/operations.md")), " ")
	doc = strings.ReplaceAll(doc, "`", "")
	for _, s := range strings.Split(treasury.AllowancesPaid, ". ") {
		s = strings.ReplaceAll(strings.TrimSuffix(s, "."), `"`, "")
		s = strings.ReplaceAll(s, "Each period is paid once, under its own key, however many instances and runs there are", "")
		if s == "" {
			continue
		}
		assert.Contains(t, doc, s, "docs/operations.md")
	}
	assert.NotContains(t, out, "every minute")
}

// TestAllowancePreviewPlaces: preview writes amounts at the currency's
// places: --currency reads them from the database (GPUH has 4), --places
// gives them without one; 2 by default, as before.
func TestAllowancePreviewPlaces(t *testing.T) {
	args := []string{"admin", "allowance", "preview", "--a", "10", "--b", "0.1", "--from", "3"}
	lines := func(t *testing.T, out string, places int) {
		t.Helper()
		frac := `\.\d{` + strconv.Itoa(places) + `}`
		if places == 0 {
			frac = ""
		}
		assert.Regexp(t, `^steady state a/b: 100`+strings.Replace(frac, `\d`, "0", 1)+`\nhalf-life: 6h55m53s\nAFTER +BALANCE\n`, out)
		rows := regexp.MustCompile(`(?m)^(now|\S+ \S+|\S+) +(\S+)$`).FindAllStringSubmatch(strings.SplitN(out, "BALANCE\n", 2)[1], -1)
		require.Len(t, rows, 5, out)
		for _, r := range rows {
			assert.Regexp(t, `^\d+`+frac+`$`, r[2], "a balance at %d places:\n%s", places, out)
		}
	}
	t.Run("Default", func(t *testing.T) {
		out, errOut, code := bourseCmd(args...)
		require.Zero(t, code, errOut)
		lines(t, out, 2)
	})
	t.Run("Places", func(t *testing.T) {
		out, errOut, code := bourseCmd(append(args, "--places", "0")...)
		require.Zero(t, code, errOut)
		lines(t, out, 0)
		_, errOut, code = bourseCmd(append(args, "--places", "19")...)
		assert.Equal(t, exitUsage, code)
		assert.Contains(t, errOut, "--places 19: want 0 to 18")
	})
	t.Run("Currency", func(t *testing.T) {
		db := pgtest.FreshDB(t)
		adminOK(t, db)("currency", "GPUH", "--scale", "4")
		out, errOut, code := bourseCmd(append(args, "--db", db, "--currency", "GPUH")...)
		require.Zero(t, code, errOut)
		lines(t, out, 4)
		_, errOut, code = bourseCmd(append(args, "--db", db, "--currency", "NOPE")...)
		assert.NotZero(t, code)
		assert.Contains(t, errOut, "--currency NOPE")
		_, errOut, code = bourseCmd(append(args, "--db", db, "--currency", "GPUH", "--places", "1")...)
		assert.Equal(t, exitUsage, code)
		assert.Contains(t, errOut, "--places with --currency")
	})
}
