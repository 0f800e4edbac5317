package console

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/caps"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/allowance"
)

func TestColumn(t *testing.T) {
	d := decimal.RequireFromString
	// The places are currency.ExactPlaces' (tested there).
	assert.Equal(t, []string{"0.50", "0.25", "2.00"}, column([]decimal.Decimal{d("0.5"), d("0.25"), d("2")}))
	assert.Equal(t, []string{}, column(nil))
	scales := map[currency.Code]int32{"CRED": 2}
	assert.Equal(t, "181.00", money(d("181"), "CRED", scales))
	assert.Equal(t, "1.5", money(d("1.5"), "OLD", scales), "a currency gone: as it is")
}

// TestOneFormatAColumn: every column of figures writes them alike, money
// in its currency's places.
func TestOneFormatAColumn(t *testing.T) {
	srv, tr, store := testConsole(t)
	ctx := context.Background()
	d := decimal.RequireFromString
	must := func(_ any, err error) { t.Helper(); require.NoError(t, err) }
	must(tr.Grant(ctx, "root", "CRED", "alice", d("181"), "g1", ""))
	must(tr.Grant(ctx, "root", "CRED", "alice", d("3.5"), "g2", ""))
	must(tr.SetSpendCap(ctx, "root", "alice", "CRED", caps.Day, d("150"), d("0.8"), "s1"))
	require.NoError(t, tr.Ledger().CreateCurrency(ctx, currency.Currency{Code: "GPUH", Scale: 0}))
	require.NoError(t, tr.Ledger().CreateCurrency(ctx, currency.Currency{Code: "EUR", Scale: 2}))
	must(tr.SetRate(ctx, "root", "CRED", "GPUH", d("0.5"), "r1"))
	must(tr.SetRate(ctx, "root", "CRED", "EUR", d("0.25"), "r2"))
	must(tr.SetAllowance(ctx, "root", allowance.Rule{Wallet: "wallet/CRED/alice", A: d("10"), B: d("0.1"), Period: time.Hour, Start: time.Now()}, "a1"))
	must(tr.SetAllowance(ctx, "root", allowance.Rule{Wallet: "wallet/CRED/acme", A: d("2.5"), B: d("0.05"), Period: time.Hour, Start: time.Now()}, "a2"))
	day := time.Now().UTC().Truncate(24 * time.Hour).Add(time.Hour)
	for i, charge := range []string{"181", "3.5"} {
		k := contract.Contract{ID: fmt.Sprint("k", i), Client: "alice", Server: "atlas", State: contract.StateAccepted, AcceptedAt: day.Add(time.Duration(i) * time.Minute),
			Terms: contract.Terms{Client: "alice", Currency: "CRED", GPUs: 1, Class: contract.Class{Model: fmt.Sprint("M", i)}}}
		_, _, err := store.Open(ctx, k, "")
		require.NoError(t, err)
		must(store.Update(ctx, k.ID, func(c *contract.Contract) ([]currency.Op, error) {
			c.State, c.Charge, c.Reading = contract.StateSettled, d(charge), &contract.Reading{Contract: c.ID, U: d("60")}
			return nil, nil
		}))
	}
	b := newBrowser(t, srv)
	b.login("vic")
	for path, want := range map[string][]string{
		"/supply?currency=CRED": {`<td class="num">181.00</td><td class="num">181.00</td>`, `<td class="num">3.50</td><td class="num">184.50</td>`},
		"/caps":                 {`<td class="num">0.00</td><td class="num">0.00</td><td class="num">150.00</td>`},
		"/rates":                {`<td>CRED</td><td>EUR</td><td class="num">0.25</td>`, `<td>CRED</td><td>GPUH</td><td class="num">0.50</td>`},
		"/allowances":           {`<td class="num">2.50</td><td class="num">0.05</td>`, `<td class="num">10.00</td><td class="num">0.10</td>`},
		"/report":               {`<td class="num">181.00 CRED</td>`, `<td class="num">3.50 CRED</td>`, `<th class="num">184.50 CRED</th>`, `<td class="num">184.50 CRED</td>`},
	} {
		_, page := b.get(path)
		for _, w := range want {
			assert.Contains(t, page, w, path)
		}
	}
}
