package allowance_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/allowance"
	"github.com/bourse/bourse/currency/mem"
	"github.com/bourse/bourse/currency/sqlledger"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/internal/pgtest"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// book is a ledger on a clock the test moves, with one wallet.
type book struct {
	t      testing.TB
	now    time.Time
	mu     sync.Mutex
	l      currency.Ledger
	wallet currency.AccountID
	n      int
}

// ledgerOn makes a ledger whose clock is now.
type ledgerOn func(t testing.TB, now func() time.Time) currency.Ledger

func memLedger(_ testing.TB, now func() time.Time) currency.Ledger {
	return mem.New(mem.Options{Now: now})
}

func sqlLedger(t testing.TB, now func() time.Time) currency.Ledger {
	l, err := sqlledger.Open(context.Background(), pgtest.FreshDB(t), sqlledger.Options{Now: now})
	require.NoError(t, err)
	t.Cleanup(l.Close)
	return l
}

func newBook(t testing.TB) *book { return newBookOn(t, memLedger) }

func newBookOn(t testing.TB, on ledgerOn) *book {
	b := &book{t: t, now: t0}
	b.l = on(t, func() time.Time { b.mu.Lock(); defer b.mu.Unlock(); return b.now })
	ctx := context.Background()
	require.NoError(t, b.l.CreateCurrency(ctx, currency.Currency{Code: "CRED", Scale: 2}))
	w, err := b.l.OpenAccount(ctx, currency.Account{ID: currency.WalletID("CRED", "ada"), Currency: "CRED", Kind: currency.Wallet})
	require.NoError(t, err)
	b.wallet = w.ID
	_, err = b.l.OpenAccount(ctx, currency.Account{ID: currency.WalletID("CRED", "shop"), Currency: "CRED", Kind: currency.Wallet})
	require.NoError(t, err)
	return b
}

func (b *book) at(t time.Time) { b.mu.Lock(); b.now = t; b.mu.Unlock() }

// grant moves amount into the wallet (or, negative, out to the shop).
func (b *book) grant(amount string) {
	b.n++
	a := decimal.RequireFromString(amount)
	tr := currency.Transfer{Key: fmt.Sprint("own/", b.n), From: currency.IssuanceID("CRED"), To: b.wallet, Amount: a}
	if a.IsNegative() {
		tr.From, tr.To, tr.Amount = b.wallet, currency.WalletID("CRED", "shop"), a.Neg()
	}
	_, err := currency.Do(context.Background(), b.l, tr)
	require.NoError(b.t, err)
}

func (b *book) balance() decimal.Decimal {
	bal, err := b.l.Balance(context.Background(), b.wallet)
	require.NoError(b.t, err)
	return bal.Available
}

// TestClosedForm: an idle wallet's balance at each grid point is
// a/b + (x₀ − a/b)·e^(−b·t), rounded to the cent, checked against
// float64 arithmetic, and tends to a/b.
func TestClosedForm(t *testing.T) {
	b := newBook(t)
	b.grant("3")
	r := allowance.Rule{Wallet: b.wallet, A: dectest.D("10"), B: dectest.D("0.1"), Start: t0}
	steady, ok := r.Steady()
	require.True(t, ok)
	assert.True(t, steady.Equal(dectest.D("100")))
	assert.InDelta(t, 6.93, r.HalfLife().Hours(), 0.01)

	for n := 1; n <= 80; n++ {
		b.at(t0.Add(time.Duration(n) * time.Hour))
		_, err := allowance.Accrue(context.Background(), b.l, r, b.now)
		require.NoError(t, err)
		want := 100 + (3-100)*math.Exp(-0.1*float64(n))
		got := b.balance().InexactFloat64()
		require.InDelta(t, want, got, 0.005+1e-9, "hour %d", n)
	}
	assert.InDelta(t, 100, b.balance().InexactFloat64(), 1, "within 1% of a/b after 80 hours (11.5 half-lives)")
}

// TestHalfLife: with a = 0 the balance halves every ln2/b.
func TestHalfLife(t *testing.T) {
	b := newBook(t)
	b.grant("1000")
	r := allowance.Rule{Wallet: b.wallet, B: decimal.NewFromFloat(math.Ln2 / 24), Start: t0}
	assert.InDelta(t, 24, r.HalfLife().Hours(), 1e-6)
	b.at(t0.Add(48 * time.Hour))
	paid, err := allowance.Accrue(context.Background(), b.l, r, b.now)
	require.NoError(t, err)
	assert.Len(t, paid, 48)
	assert.InDelta(t, 250, b.balance().InexactFloat64(), 0.01, "two half-lives")
	rep, err := b.l.Audit(context.Background())
	require.NoError(t, err)
	assert.True(t, rep.OK(), "%s", rep)
}

// TestAnySplit is the property: however the scheduler's runs split time
// (every minute, once at the end, at random moments, twice at once),
// the wallet gets the same payments, period by period, as one run at the
// end, and the same balance, whatever its own movements in between.
func TestAnySplit(t *testing.T) { anySplit(t, memLedger, 40) }

// TestAnySplitSQL is the property on PostgreSQL, fewer times.
func TestAnySplitSQL(t *testing.T) { anySplit(t, sqlLedger, 10) }

func anySplit(t *testing.T, on ledgerOn, seeds uint64) {
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			r := allowance.Rule{A: decimal.New(int64(rng.IntN(5000)), -2), B: decimal.New(int64(rng.IntN(300)), -3),
				Period: time.Duration(1+rng.IntN(4)) * 15 * time.Minute, Start: t0}
			if r.A.IsZero() && r.B.IsZero() {
				r.A = dectest.D("1")
			}
			end := t0.Add(time.Duration(12+rng.IntN(48)) * time.Hour)
			type event struct {
				at    time.Time
				grant string // "" for a scheduler run
			}
			var own, runs []event
			for range rng.IntN(12) {
				// Inflows only, and outflows that the wallet covers at
				// any moment: what a decay takes is then always there.
				own = append(own, event{at: t0.Add(time.Duration(rng.Int64N(int64(end.Sub(t0))))), grant: fmt.Sprintf("%d.%02d", rng.IntN(300), rng.IntN(100))})
			}
			for range rng.IntN(20) {
				runs = append(runs, event{at: t0.Add(time.Duration(rng.Int64N(int64(end.Sub(t0)))))})
			}
			play := func(evs []event) (map[string]decimal.Decimal, decimal.Decimal) {
				b := newBookOn(t, on)
				r := r
				r.Wallet = b.wallet
				evs = append(slices.Clone(evs), event{at: end})
				slices.SortStableFunc(evs, func(x, y event) int { return x.at.Compare(y.at) })
				for _, e := range evs {
					b.at(e.at)
					if e.grant != "" {
						b.grant(e.grant)
						continue
					}
					var wg sync.WaitGroup
					for range 2 { // two schedulers at once
						wg.Go(func() {
							_, err := allowance.Accrue(context.Background(), b.l, r, e.at)
							assert.NoError(t, err)
						})
					}
					wg.Wait()
				}
				paid, err := allowance.Accrue(context.Background(), b.l, r, end)
				require.NoError(t, err)
				got := map[string]decimal.Decimal{}
				for _, p := range paid {
					require.False(t, p.New, "the last run found %s unpaid", p.Key)
					if !p.Amount.IsZero() {
						got[p.Key] = p.Amount
					}
				}
				rep, err := b.l.Audit(context.Background())
				require.NoError(t, err)
				require.True(t, rep.OK(), "%s", rep)
				return got, b.balance()
			}
			oncePaid, onceBal := play(own)
			splitPaid, splitBal := play(append(slices.Clone(own), runs...))
			require.Equal(t, len(oncePaid), len(splitPaid))
			for k, v := range oncePaid {
				require.True(t, v.Equal(splitPaid[k]), "%s: %s at once, %s split", k, v, splitPaid[k])
			}
			require.True(t, onceBal.Equal(splitBal), "balance %s at once, %s split", onceBal, splitBal)
		})
	}
}

// TestSpending: a wallet that spends starts a new stretch from what it
// has left; a decay larger than what is there takes what there is.
func TestSpending(t *testing.T) {
	b := newBook(t)
	b.grant("100")
	r := allowance.Rule{Wallet: b.wallet, A: dectest.D("0"), B: dectest.D("0.5"), Start: t0}
	ctx := context.Background()
	b.at(t0.Add(time.Hour))
	_, err := allowance.Accrue(ctx, b.l, r, b.now)
	require.NoError(t, err)
	assert.Equal(t, "60.65", b.balance().StringFixed(2), "100·e^−0.5")
	b.at(t0.Add(90 * time.Minute))
	b.grant("-60") // spent almost all of it before the next decay was paid
	b.at(t0.Add(3 * time.Hour))
	paid, err := allowance.Accrue(ctx, b.l, r, b.now)
	require.NoError(t, err)
	require.Len(t, paid, 3)
	assert.True(t, b.balance().GreaterThanOrEqual(decimal.Zero))
	assert.Equal(t, "0.24", b.balance().StringFixed(2), "0.65 decayed twice: 0.65·e^−1")
}

func TestRuleErrors(t *testing.T) {
	for _, r := range []allowance.Rule{
		{A: dectest.D("1"), Start: t0},
		{Wallet: "w", A: dectest.D("-1"), Start: t0},
		{Wallet: "w", B: dectest.D("-1"), A: dectest.D("1"), Start: t0},
		{Wallet: "w", Start: t0},
		{Wallet: "w", A: dectest.D("1")},
	} {
		assert.Error(t, r.Validate(), "%+v", r)
	}
	_, err := allowance.Accrue(context.Background(), mem.New(mem.Options{}), allowance.Rule{Wallet: "wallet/CRED/nobody", A: dectest.D("1"), Start: t0}, t0.Add(time.Hour))
	assert.ErrorContains(t, err, "nobody")
}

// TestIsPayment: every payment's key (Key) is told from the ledger's
// other entries, whatever its wallet, rule version or period.
func TestIsPayment(t *testing.T) {
	w := currency.WalletID("CRED", "alice")
	assert.True(t, allowance.IsPayment(allowance.Key(w, 0, 7)))
	assert.True(t, allowance.IsPayment(allowance.Key(w, 3, 1)))
	for _, k := range []string{"grant/alice", "hold/k1", "topup/alice/allowance/1", ""} {
		assert.False(t, allowance.IsPayment(k), k)
	}
}
