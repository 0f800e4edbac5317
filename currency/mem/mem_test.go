package mem_test

import (
	"testing"
	"time"

	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/ledgertest"
	"github.com/bourse/bourse/currency/mem"
)

func open(_ testing.TB, now func() time.Time) currency.Ledger {
	return mem.New(mem.Options{Now: now})
}

func TestConformance(t *testing.T) { ledgertest.Run(t, open) }

func TestCompaction(t *testing.T) {
	ledgertest.RunCompaction(t, open, func(l currency.Ledger, before time.Time) { l.(*mem.Ledger).Compact(before) })
}
