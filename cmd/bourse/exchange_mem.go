package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/spf13/pflag"

	"github.com/bourse/bourse/bidder"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/treasury"
)

// throwaway is what an exchange on an in-memory ledger (--db mem) starts
// with, since no `bourse admin` can reach its ledger: a currency, and
// wallets funded from flags, as the demo funds its clients.
type throwaway struct {
	currency string
	scale    int32
	fund     []string // ID=AMOUNT
}

func (w *throwaway) addFlags(f *pflag.FlagSet) {
	f.StringVar(&w.currency, "mem-currency", bidder.DefaultCurrency, "with --db mem: the currency the throwaway ledger starts with")
	f.Int32Var(&w.scale, "mem-scale", 2, "with --db mem: its decimal places")
	f.StringArrayVar(&w.fund, "fund", nil, "with --db mem: open client ID's wallet with AMOUNT in it, as ID=AMOUNT (repeat for more)")
}

// check refuses the throwaway's flags on a real database, whose money
// only the administrators' commands move.
func (w *throwaway) check(fs *pflag.FlagSet, dbURL string) error {
	if dbURL == "mem" {
		return nil
	}
	for _, name := range []string{"mem-currency", "mem-scale", "fund"} {
		if fs.Changed(name) {
			return usagef("--%s is for --db mem; on a database, currencies and wallets are the administrators' (bourse admin currency, open, grant)", name)
		}
	}
	return nil
}

// setUp makes the currency and funds the wallets, through the treasury
// so that its audit trail holds them.
func (w *throwaway) setUp(ctx context.Context, t *treasury.Treasury, log *slog.Logger) error {
	const actor = "exchange --db mem"
	cur := currency.Currency{Code: currency.Code(w.currency), Scale: w.scale}
	if err := cur.Validate(); err != nil {
		return usagef("--mem-currency %s --mem-scale %d: %w", w.currency, w.scale, err)
	}
	if _, err := t.CreateCurrency(ctx, actor, cur, "currency/"+w.currency); err != nil {
		return err
	}
	var funded []string
	for _, f := range w.fund {
		id, amt, ok := strings.Cut(f, "=")
		if !ok || id == "" {
			return usagef("--fund %q: want ID=AMOUNT, such as you=100", f)
		}
		d, err := amount("--fund "+id, amt)
		if err != nil {
			return err
		}
		if err := cur.CheckAmount("--fund "+id, d); err != nil {
			return usagef("--fund %s: %w", f, err)
		}
		if _, err := t.Open(ctx, actor, cur.Code, id, "", treasury.OpenKey(currency.WalletID(cur.Code, id))); err != nil {
			return fmt.Errorf("--fund %s: %w", f, err)
		}
		if _, err := t.Grant(ctx, actor, cur.Code, id, d, "grant/"+id, "throwaway budget"); err != nil {
			return fmt.Errorf("--fund %s: %w", f, err)
		}
		funded = append(funded, id+" "+currency.Format(d, cur.Scale))
	}
	if len(funded) == 0 {
		log.Warn("in-memory ledger with no client funded: no offer can be escrowed (--fund ID=AMOUNT)", "currency", w.currency)
	}
	log.Info("in-memory ledger ready", "currency", w.currency, "scale", w.scale, "funded", strings.Join(funded, ", "))
	return nil
}
