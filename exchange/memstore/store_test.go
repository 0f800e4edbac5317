package memstore_test

import (
	"testing"

	"github.com/bourse/bourse/currency/mem"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/memstore"
	"github.com/bourse/bourse/exchange/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(testing.TB) exchange.Store { return memstore.New(mem.New(mem.Options{})) })
}
