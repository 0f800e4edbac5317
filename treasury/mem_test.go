package treasury_test

import (
	"testing"

	"github.com/bourse/bourse/currency/mem"
	"github.com/bourse/bourse/treasury"
	"github.com/bourse/bourse/treasury/treasurytest"
)

func TestMem(t *testing.T) {
	treasurytest.Run(t, func(testing.TB) treasury.Store {
		return treasury.NewMem(mem.New(mem.Options{}), nil)
	})
}
