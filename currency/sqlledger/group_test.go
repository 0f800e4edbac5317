package sqlledger

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/currency"
)

// A call that the database refuses fails alone: its group falls back to
// one transaction per call. (PostgreSQL refuses a NUL byte in text; the
// rules of package currency let memos through as they are.)
func TestGroupFailsAlone(t *testing.T) {
	l, _ := openTest(t, Options{})
	ctx := context.Background()
	require.NoError(t, l.CreateCurrency(ctx, currency.Currency{Code: "GPU", Scale: 2}))
	const n = 16
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := currency.WalletID("GPU", fmt.Sprint(i))
			if _, err := l.OpenAccount(ctx, currency.Account{ID: id, Currency: "GPU", Kind: currency.Wallet}); err != nil {
				errs[i] = err
				return
			}
			memo := "grant"
			if i == 7 {
				memo = "bad\x00memo"
			}
			_, errs[i] = currency.Do(ctx, l, currency.Transfer{Key: fmt.Sprint("k", i), From: currency.IssuanceID("GPU"), To: id,
				Amount: decimal.NewFromInt(5), Memo: memo})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if i == 7 {
			assert.Error(t, err, "the NUL memo")
			continue
		}
		assert.NoError(t, err, "call %d", i)
	}
	b, err := l.Balance(ctx, currency.IssuanceID("GPU"))
	require.NoError(t, err)
	assert.True(t, b.Available.Equal(decimal.NewFromInt(-5*(n-1))), "%s", b.Available)
	rep, err := l.Audit(ctx)
	require.NoError(t, err)
	assert.True(t, rep.OK(), "%s", rep)
}

func TestApplyAfterClose(t *testing.T) {
	for _, opts := range []Options{{}, {GroupCommit: -1}} {
		l, _ := openTest(t, opts)
		l.Close()
		_, err := l.Apply(context.Background(), currency.Void{Key: "k", Hold: "h"})
		assert.Error(t, err)
	}
}
