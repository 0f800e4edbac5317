package treasury_test

import (
	"testing"
	"time"

	"github.com/bourse/bourse/currency/mem"
	"github.com/bourse/bourse/treasury"
	"github.com/bourse/bourse/treasury/treasurytest"
)

func TestMem(t *testing.T) {
	treasurytest.Run(t, func(_ testing.TB, now func() time.Time) treasury.Store {
		return treasury.NewMem(mem.New(mem.Options{Now: now}), now)
	})
}
