package memstore_test

import (
	"testing"
	"time"

	"github.com/bourse/bourse/currency/mem"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/memstore"
	"github.com/bourse/bourse/exchange/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(testing.TB) exchange.Store { return memstore.New(mem.New(mem.Options{})) })
}

func TestForget(t *testing.T) {
	storetest.RunForget(t,
		func(_ testing.TB, now func() time.Time) exchange.Store {
			return memstore.New(mem.New(mem.Options{Now: now}))
		},
		func(s exchange.Store, before time.Time) {
			s.(*memstore.Store).Forget(before)
			s.Ledger().(*mem.Ledger).Compact(before)
		})
}
