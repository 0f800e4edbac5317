package protocol

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
)

func TestAtScale(t *testing.T) {
	scales := func(code string) (int32, bool) {
		s, ok := map[string]int32{"CRED": 2, "YEN": 0}[code]
		return s, ok
	}
	for _, tc := range []struct {
		name, in, cur, want string
	}{
		{"Balance", `{"account":"wallet/CRED/you","currency":"CRED","available":"0.5","held":"0","scale":2}`, "",
			`{"account":"wallet/CRED/you","currency":"CRED","available":"0.50","held":"0.00","scale":2}`},
		{"OwnScaleWins", `{"currency":"CRED","available":"7","scale":3}`, "", `{"currency":"CRED","available":"7.000","scale":3}`},
		{"ContractByItsTerms", `{"id":"c-1","terms":{"currency":"CRED","prepayment":"24","p":[["0","0.4"]]},"charge":"0.1","refund":"23.9"}`, "",
			`{"id":"c-1","terms":{"currency":"CRED","prepayment":"24.00","p":[["0","0.4"]]},"charge":"0.10","refund":"23.90"}`},
		{"EventByItsContract", `{"type":"reading","contract":{"terms":{"currency":"YEN","prepayment":"24"}},"due":"3"}`, "",
			`{"type":"reading","contract":{"terms":{"currency":"YEN","prepayment":"24"}},"due":"3"}`},
		{"StatementByDefault", `[{"seq":1,"amount":"-1.5","balance":"98.5","memo":"x"}]`, "CRED", `[{"seq":1,"amount":"-1.50","balance":"98.50","memo":"x"}]`},
		{"FinerStays", `{"currency":"CRED","charge":"0.125"}`, "", `{"currency":"CRED","charge":"0.125"}`},
		{"UnknownCurrencyStays", `{"currency":"NOPE","charge":"1"}`, "", `{"currency":"NOPE","charge":"1"}`},
		{"NotMoneyStays", `{"currency":"CRED","price":"0.3","u":"1"}`, "", `{"currency":"CRED","price":"0.3","u":"1"}`},
		{"SpendCapByItsCurrency", `[{"owner":"alice","currency":"CRED","period":"day","limit":"150","warn":"0.8","used":"0.5","held":"0"}]`, "",
			`[{"owner":"alice","currency":"CRED","period":"day","limit":"150.00","warn":"0.8","used":"0.50","held":"0.00"}]`},
		{"TopUpByItsWallet", `{"wallet":"wallet/YEN/bob","below":"10","to":"30.5","every":60000000000}`, "CRED",
			`{"wallet":"wallet/YEN/bob","below":"10","to":"30.5","every":60000000000}`},
		{"ToppedUpByItsWallet", `[{"wallet":"wallet/CRED/alice","amount":"28","key":"topup/CRED/alice/1"}]`, "",
			`[{"wallet":"wallet/CRED/alice","amount":"28.00","key":"topup/CRED/alice/1"}]`},
		{"RefillByItsBucket", `{"bucket":"wallet/CRED/spend-rate:alice","amount":"0.5","steps":3}`, "",
			`{"bucket":"wallet/CRED/spend-rate:alice","amount":"0.50","steps":3}`},
		{"AllowancesByWallet", `{"allowances":{"wallet/CRED/alice":[{"period":1,"amount":"1","key":"k"}]}}`, "",
			`{"allowances":{"wallet/CRED/alice":[{"period":1,"amount":"1.00","key":"k"}]}}`},
		{"TrailBalancesByAccount", `{"before":{"wallet/CRED/alice":"100","rate":"0.5"},"after":{"wallet/CRED/alice":"80","wallet/YEN/alice":"2000"}}`, "",
			`{"before":{"wallet/CRED/alice":"100.00","rate":"0.5"},"after":{"wallet/CRED/alice":"80.00","wallet/YEN/alice":"2000"}}`},
		{"ReportLines", `{"to":"2026-12-01T00:00:00Z","lines":[{"currency":"CRED","gpu_seconds":"3.5","cost":"1.5"}],"servers":[{"currency":"CRED","revenue":"4"}]}`, "",
			`{"to":"2026-12-01T00:00:00Z","lines":[{"currency":"CRED","gpu_seconds":"3.5","cost":"1.50"}],"servers":[{"currency":"CRED","revenue":"4.00"}]}`},
		{"MarketByItsScale", `{"currency":"CRED","scale":2,"models":[{"charged":"12.5","prices":{"low":"0.3"}}]}`, "",
			`{"currency":"CRED","scale":2,"models":[{"charged":"12.50","prices":{"low":"0.3"}}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := AtScale([]byte(tc.in), tc.cur, scales)
			require.NoError(t, err)
			var compact bytes.Buffer
			require.NoError(t, json.Compact(&compact, got))
			assert.Equal(t, tc.want, compact.String(), "the same keys in the same order, money at scale")
		})
	}
}

// TestAtScaleKeepsValues: a contract printed at scale decodes to the same
// contract: only the zeros after the point change.
func TestAtScaleKeepsValues(t *testing.T) {
	k := ContractView{ID: "c-1", Terms: contract.Terms{Currency: "CRED", GPUs: 1, Prepayment: decimal.RequireFromString("24"),
		P: contract.Flat(decimal.RequireFromString("0.4"))}, Charge: decimal.RequireFromString("0.1"), Refund: decimal.RequireFromString("23.9")}
	raw, err := json.Marshal(k)
	require.NoError(t, err)
	got, err := AtScale(raw, "", func(string) (int32, bool) { return 2, true })
	require.NoError(t, err)
	assert.Contains(t, string(got), `"charge": "0.10"`)
	var back ContractView
	require.NoError(t, json.Unmarshal(got, &back))
	assert.True(t, back.Charge.Equal(k.Charge) && back.Refund.Equal(k.Refund) && back.Terms.Prepayment.Equal(k.Terms.Prepayment))
	assert.True(t, back.Terms.P.Equal(k.Terms.P))
}
