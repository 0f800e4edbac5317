package natsvc_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/protocol"
)

// A retried offer (the same request id) answers with the first try's
// contract, escrowed once, whatever has changed since: the client can no
// longer pay for a second, can again, or no server would accept now.
func TestRetryAnswersFirstContract(t *testing.T) {
	onStores(t, func(t *testing.T, store exchange.Store) {
		m := newMarketOn(t, store, honest)
		m.wallet("alice", "6") // one prepayment
		var accepting atomic.Bool
		accepting.Store(true)
		m.scriptedServer("gpu1", 8, func(o protocol.ServerOffer) protocol.Decision {
			if accepting.Load() {
				return accept(o)
			}
			return protocol.Decision{Reason: "full"}
		})
		alice := m.client("alice")
		ctx := context.Background()
		w := currency.WalletID(cred, "alice")

		first, err := alice.Offer(ctx, "r1", terms("alice"))
		require.NoError(t, err)
		require.NotNil(t, first.Contract)
		same := func(what string) {
			t.Helper()
			r, err := alice.Offer(ctx, "r1", terms("alice"))
			require.NoError(t, err, what)
			require.NotNil(t, r.Contract, "%s: %+v", what, r)
			assert.Equal(t, first.Contract.ID, r.Contract.ID, what)
		}

		same("retry with the wallet empty")
		assert.True(t, m.balance(w).Held.Equal(dectest.D("6")), "escrowed once")

		_, err = currency.Do(ctx, m.ledger, currency.Transfer{Key: "more", From: currency.IssuanceID(cred), To: w, Amount: dectest.D("100")})
		require.NoError(t, err)
		same("retry that could pay for another")
		assert.True(t, m.balance(w).Held.Equal(dectest.D("6")), "still escrowed once")

		accepting.Store(false)
		same("retry that no server accepts")
		assert.True(t, m.balance(w).Available.Equal(dectest.D("100")), "%+v", m.balance(w))
		m.audit()
	})
}
