package treasury

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/bourse/bourse/currency"
)

// TestActionAtScale: what an action noted, as a person reads it: every
// amount of money at its currency's places, nothing else touched.
func TestActionAtScale(t *testing.T) {
	scaleOf := func(c currency.Code) (int32, bool) {
		s, ok := map[currency.Code]int32{"CRED": 2, "EUR": 2, "YEN": 0}[c]
		return s, ok
	}
	for _, tc := range []struct {
		name          string
		a             Action
		before, after map[string]string
	}{
		{"Exchange", Action{Kind: KindExchange, Target: "alice",
			Before: map[string]string{"wallet/CRED/alice": "100", "wallet/YEN/alice": "5"},
			After:  map[string]string{"rate": "0.5", "wallet/CRED/alice": "80.5", "wallet/YEN/alice": "15"}},
			map[string]string{"wallet/CRED/alice": "100.00", "wallet/YEN/alice": "5"},
			map[string]string{"rate": "0.5", "wallet/CRED/alice": "80.50", "wallet/YEN/alice": "15"}},
		{"SpendCap", Action{Kind: KindSpendCapSet, Target: "CRED/alice/day",
			Before: map[string]string{"spend-cap": `{"limit":"150","warn":"0.8"}`},
			After:  map[string]string{"spend-cap": `{"limit":"150.5","warn":"0.8"}`, "wallet/CRED/spend:alice/day/1": "0.5"}},
			map[string]string{"spend-cap": `{"limit":"150.00","warn":"0.8"}`},
			map[string]string{"spend-cap": `{"limit":"150.50","warn":"0.8"}`, "wallet/CRED/spend:alice/day/1": "0.50"}},
		{"SpendRate", Action{Kind: KindSpendRateSet, Target: "CRED/alice",
			After: map[string]string{"spend-rate": `{"owner":"alice","currency":"CRED","capacity":"50","per_hour":"5","warn":"0.8","step":0,"refilled":3}`}},
			nil,
			map[string]string{"spend-rate": `{"owner":"alice","currency":"CRED","capacity":"50.00","per_hour":"5.00","warn":"0.8","step":0,"refilled":3}`}},
		{"TopUp", Action{Kind: KindTopUp, Target: "wallet/CRED/alice",
			After: map[string]string{"amount": "28", "topup": `{"wallet":"wallet/CRED/alice","below":"10","to":"30","every":60000000000}`}},
			nil,
			map[string]string{"amount": "28.00", "topup": `{"wallet":"wallet/CRED/alice","below":"10.00","to":"30.00","every":60000000000}`}},
		{"SaleCostInWhatPaid", Action{Kind: KindSale, Target: "bob",
			After: map[string]string{"price": "0.02", "cost": "2", "wallet/EUR/sales:YEN": "2", "wallet/YEN/bob": "100"}},
			nil,
			map[string]string{"price": "0.02", "cost": "2.00", "wallet/EUR/sales:YEN": "2.00", "wallet/YEN/bob": "100"}},
		{"FinerStays", Action{Kind: KindGrant, Target: "wallet/CRED/alice", After: map[string]string{"wallet/CRED/alice": "0.125"}},
			nil, map[string]string{"wallet/CRED/alice": "0.125"}},
		{"UnknownCurrencyStays", Action{Kind: KindGrant, Target: "wallet/NOPE/alice", After: map[string]string{"wallet/NOPE/alice": "1", "amount": "1"}},
			nil, map[string]string{"wallet/NOPE/alice": "1", "amount": "1"}},
		{"GPUCapIsNoMoney", Action{Kind: KindCapSet, Target: "alice", Before: map[string]string{"cap": "4", "in_use": "2"}},
			map[string]string{"cap": "4", "in_use": "2"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.a.AtScale(scaleOf)
			assert.Equal(t, tc.before, got.Before)
			assert.Equal(t, tc.after, got.After)
		})
	}
}
