package exchange

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/trade"
)

// Spend caps limit what a client, or the project or organisation its
// wallet sits under, may commit in a currency per day or per month (UTC).
// Each period has its own budget: a wallet in the unit currency
// SPEND-<currency> (SpendWallet), minted with the cap's limit the first
// time an offer meets the period. An offer reserves its prepayment from
// the budget of every cap above it, in the same ledger transaction as the
// escrow, so that no number of offers at once can pass a cap, and a cap
// counts what is escrowed, not only what was charged: nothing overruns
// while jobs run. Settlement captures the charge from each budget (to
// SpentID) and gives back the rest; a void gives back all. A refund after
// the period ended goes back to that period's budget, never the next.

// SpendPeriod is how long a spend cap's budget lasts.
type SpendPeriod string

const (
	// Hourly caps the rate of spending, in fixed windows of an hour (a
	// token bucket's continuous refill is not done: across the edge of
	// two hours up to twice the limit can be committed within an hour).
	Hourly  SpendPeriod = "hour"
	Daily   SpendPeriod = "day"
	Monthly SpendPeriod = "month"
	// Rate is a token bucket: one budget for good, which the treasury
	// refills at a rate up to a capacity (treasury.SpendRate); the House
	// reserves from it and never mints into it.
	Rate SpendPeriod = "rate"
)

// Valid reports whether p is a period of a spend cap with a limit per
// period (a bucket is set otherwise).
func (p SpendPeriod) Valid() bool { return p == Hourly || p == Daily || p == Monthly }

// label names the period of p that contains at, and when it ends.
func (p SpendPeriod) label(at time.Time) (string, time.Time) {
	at = at.UTC()
	if p == Rate {
		return "bucket", time.Time{}
	}
	if p == Hourly {
		start := at.Truncate(time.Hour)
		return start.Format("2006-01-02T15"), start.Add(time.Hour)
	}
	if p == Monthly {
		start := time.Date(at.Year(), at.Month(), 1, 0, 0, 0, 0, time.UTC)
		return start.Format("2006-01"), start.AddDate(0, 1, 0)
	}
	start := time.Date(at.Year(), at.Month(), at.Day(), 0, 0, 0, 0, time.UTC)
	return start.Format("2006-01-02"), start.AddDate(0, 0, 1)
}

// SpendCap is one cap on Owner's spending in Currency.
type SpendCap struct {
	Owner    string          `json:"owner"`
	Currency currency.Code   `json:"currency"`
	Period   SpendPeriod     `json:"period"`
	Limit    decimal.Decimal `json:"limit"`
	// Warn is the share of the limit (0.8 for 80%) past which the client
	// whose offer crosses it gets a spend_warning event; zero for none.
	Warn decimal.Decimal `json:"warn"`
}

// SpendCaps gives the caps on an owner's spending in a currency. The
// treasury keeps them; the House asks for the client's own and its
// parents'.
type SpendCaps interface {
	SpendCaps(ctx context.Context, owner string, cur currency.Code) ([]SpendCap, error)
}

// FreshSpendCaps is a SpendCaps that answers from a cache and can also
// read the store: the House reads afresh the limit it mints a period's
// budget with, so that a cap changed just before a period begins is the
// one the period gets.
type FreshSpendCaps interface {
	FreshSpendCaps(ctx context.Context, owner string, cur currency.Code) ([]SpendCap, error)
}

// SpendCode is the unit currency of cur's spend budgets. Currency codes
// are at most 16 characters, so spend caps need a cur of at most 10.
func SpendCode(cur currency.Code) currency.Code { return "SPEND-" + cur }

// SpendWallet is the budget of owner's cap of period p at time at.
func SpendWallet(owner string, cur currency.Code, p SpendPeriod, at time.Time) currency.AccountID {
	label, _ := p.label(at)
	return currency.WalletID(SpendCode(cur), owner+"@"+string(p)+"."+label)
}

// BudgetKey is the key of the transfer that first gives budget w its
// limit, whoever makes it: the House when an offer first meets the period,
// or the treasury when a cap is set before that.
func BudgetKey(w currency.AccountID) string {
	return "spend-budget/" + strings.TrimPrefix(string(w), "wallet/")
}

// SpentID collects what the budgets of cur paid for: captures need a
// destination in the budget's currency.
func SpentID(cur currency.Code) currency.AccountID {
	return currency.RevenueID(SpendCode(cur), "spent")
}

// spendCheck is one cap an offer is under: its budget now.
type spendCheck struct {
	cap    SpendCap
	wallet currency.AccountID
	ends   time.Time
	bal    currency.Balance
}

// spendChecks finds the caps above client in cur, makes each budget of
// this period where it is missing, and refuses the offer if one cannot
// cover prepayment now (the escrow's reserves check again, atomically).
func (h *House) spendChecks(ctx context.Context, client string, cur currency.Code, prepayment decimal.Decimal) ([]spendCheck, error) {
	if h.cfg.SpendCaps == nil {
		return nil, nil
	}
	owners, err := h.owners(ctx, client, cur)
	if err != nil {
		return nil, err
	}
	now := h.cfg.Now()
	var out []spendCheck
	for _, o := range owners {
		caps, err := h.cfg.SpendCaps.SpendCaps(ctx, o, cur)
		if err != nil {
			return nil, fmt.Errorf("spend caps of %s: %w", o, err)
		}
		for _, c := range caps {
			sc := spendCheck{cap: c, wallet: SpendWallet(o, cur, c.Period, now)}
			_, sc.ends = c.Period.label(now)
			if err := h.budget(ctx, sc); err != nil {
				return nil, err
			}
			if sc.bal, err = h.store.Ledger().Balance(ctx, sc.wallet); err != nil {
				return nil, err
			}
			if sc.bal.Available.LessThan(prepayment) {
				return nil, sc.exceeded(prepayment)
			}
			out = append(out, sc)
		}
	}
	return out, nil
}

// exceeded is the refusal of an offer that sc's budget cannot cover.
func (sc spendCheck) exceeded(prepayment decimal.Decimal) error {
	used := sc.cap.Limit.Sub(sc.bal.Available)
	if sc.cap.Period == Rate {
		return &bourse.Error{Code: bourse.ECapExceeded, Field: "terms.prepayment",
			Message: fmt.Sprintf("spend rate of %s: %s of its %s %s left, a prepayment of %s asked; it refills as time passes, and as contracts settle",
				sc.cap.Owner, sc.bal.Available.String(), sc.cap.Limit.String(), sc.cap.Currency, prepayment.String())}
	}
	return &bourse.Error{Code: bourse.ECapExceeded, Field: "terms.prepayment",
		Message: fmt.Sprintf("%s spend cap of %s: %s of %s %s charged or held this %s, a prepayment of %s asked; it frees as contracts settle and renews at %s",
			sc.cap.Period, sc.cap.Owner, used.String(), sc.cap.Limit.String(), sc.cap.Currency, sc.cap.Period, prepayment.String(), sc.ends.Format(time.RFC3339))}
}

// budget makes sc's budget for the period, once: the unit currency, its
// spent account, the wallet, and the limit minted under a key of the
// period, so that exchanges racing to make it make it once.
func (h *House) budget(ctx context.Context, sc spendCheck) error {
	if h.budgets.has(sc.wallet) {
		return nil
	}
	l := h.store.Ledger()
	money, err := l.Currency(ctx, sc.cap.Currency)
	if err != nil {
		return err
	}
	code := SpendCode(sc.cap.Currency)
	if err := l.CreateCurrency(ctx, currency.Currency{Code: code, Scale: money.Scale}); err != nil {
		return fmt.Errorf("spend cap currency %s: %w", code, err)
	}
	for _, a := range []currency.Account{
		{ID: SpentID(sc.cap.Currency), Currency: code, Kind: currency.Revenue},
		{ID: sc.wallet, Currency: code, Kind: currency.Wallet},
	} {
		if _, err := l.OpenAccount(ctx, a); err != nil {
			return fmt.Errorf("spend cap budget %s: %w", a.ID, err)
		}
	}
	if f, ok := h.cfg.SpendCaps.(FreshSpendCaps); ok && sc.cap.Period != Rate {
		caps, err := f.FreshSpendCaps(ctx, sc.cap.Owner, sc.cap.Currency)
		if err != nil {
			return fmt.Errorf("spend caps of %s: %w", sc.cap.Owner, err)
		}
		for _, c := range caps {
			if c.Period == sc.cap.Period {
				sc.cap.Limit = c.Limit
			}
		}
	}
	if sc.cap.Limit.IsPositive() && sc.cap.Period != Rate {
		mint := currency.Transfer{Key: BudgetKey(sc.wallet), From: currency.IssuanceID(code),
			To: sc.wallet, Amount: sc.cap.Limit, Memo: fmt.Sprintf("%s spend cap of %s", sc.cap.Period, sc.cap.Owner)}
		if _, err := currency.Do(ctx, l, mint); err != nil && bourse.ErrorCode(err) != bourse.EIdempotencyConflict {
			return fmt.Errorf("spend cap budget %s: %w", sc.wallet, err)
		}
	}
	h.budgets.remember(sc.wallet, sc.ends, h.cfg.Now())
	return nil
}

// owners are client and the owners of the wallets above its wallet in
// cur (its project, its organisation), nearest first. Parents never
// change, so they are remembered.
func (h *House) owners(ctx context.Context, client string, cur currency.Code) ([]string, error) {
	key := string(currency.WalletID(cur, client))
	if v, ok := h.parents.Load(key); ok {
		return v.([]string), nil
	}
	owners := []string{client}
	prefix := string(currency.WalletID(cur, ""))
	id := currency.AccountID(key)
	for range 8 { // a hierarchy is a few levels; a cycle cannot be opened, but stop anyway
		a, err := h.store.Ledger().Account(ctx, id)
		if err != nil {
			return nil, err
		}
		if a.Parent == "" {
			break
		}
		owners = append(owners, strings.TrimPrefix(string(a.Parent), prefix))
		id = a.Parent
	}
	h.parents.Store(key, owners)
	return owners, nil
}

// spendReserves are the reserves of a contract's prepayment from the
// budgets it is under, in the escrow's transaction.
func spendReserves(c *trade.Contract, offerID string, checks []spendCheck, deadline time.Time) []currency.Reserve {
	var out []currency.Reserve
	for i, sc := range checks {
		hold := fmt.Sprintf("spend/%s/%d", c.ID, i)
		c.SpendHolds = append(c.SpendHolds, hold)
		out = append(out, currency.Reserve{Key: fmt.Sprintf("spend-reserve/%s/%d", offerID, i), Hold: currency.HoldID(hold), From: sc.wallet,
			Amount: c.Terms.Prepayment, Deadline: deadline.Add(capHoldGrace), Memo: fmt.Sprintf("prepayment of contract %s, %s spend cap of %s", c.ID, sc.cap.Period, sc.cap.Owner)})
	}
	return out
}

// spendSettle captures charge from each budget an ended contract reserved
// from and gives back the rest (a void passes zero), where the budget's
// hold is still open (see capRelease).
func spendSettle(c *trade.Contract, charge decimal.Decimal) []currency.Op {
	var ops []currency.Op
	for i, id := range c.SpendHolds {
		ops = append(ops, currency.Capture{Key: fmt.Sprintf("spend-settle/%s/%d", c.ID, i), Hold: currency.HoldID(id),
			To: SpentID(currency.Code(c.Terms.Currency)), Amount: charge, Memo: "contract " + c.ID + " ended", IfOpen: true})
	}
	return ops
}

// spendWarn tells the client of an offer that took a budget past its
// cap's warning share.
func (h *House) spendWarn(ctx context.Context, c trade.Contract, checks []spendCheck) {
	for _, sc := range checks {
		if !sc.cap.Warn.IsPositive() {
			continue
		}
		after, err := h.store.Ledger().Balance(ctx, sc.wallet)
		if err != nil {
			continue
		}
		line := sc.cap.Limit.Mul(decimal.NewFromInt(1).Sub(sc.cap.Warn))
		if sc.bal.Available.GreaterThan(line) && !after.Available.GreaterThan(line) {
			used := sc.cap.Limit.Sub(after.Available)
			pct := used.Mul(decimal.NewFromInt(100)).Div(sc.cap.Limit).Round(0)
			warning := fmt.Sprintf("%s spend cap of %s: %s of %s %s used this %s (%s%%); offers past it are refused until %s",
				sc.cap.Period, sc.cap.Owner, used, sc.cap.Limit, sc.cap.Currency, sc.cap.Period, pct, sc.ends.Format(time.RFC3339))
			if sc.cap.Period == Rate {
				warning = fmt.Sprintf("spend rate of %s: %s of its %s %s used (%s%%); offers past it are refused until it refills",
					sc.cap.Owner, used, sc.cap.Limit, sc.cap.Currency, pct)
			}
			h.notify.Notify(c.Client, protocol.Event{Type: protocol.EventSpendWarning, Contract: c, At: h.cfg.Now().UTC(), Warning: warning})
		}
	}
}

// budgets and parents are the House's memory of spend budgets made and
// of wallets' parents.
type spendMemory struct {
	budgets budgetMemory
	parents sync.Map // wallet ID → []string
}

// pruneBudgetsEvery is how often the memory of budgets forgets those of
// periods that have ended: a window's budget is one wallet per owner per
// hour, day or month, and an exchange runs for months.
const pruneBudgetsEvery = time.Minute

// budgetMemory remembers the budgets made, each with the end of its
// period (zero for a spend rate's, which never ends), and forgets those
// whose period has ended: no offer asks for them again, since an offer's
// budget is its period's now.
type budgetMemory struct {
	m          sync.Map // currency.AccountID → time.Time
	mu         sync.Mutex
	lastPruned time.Time
}

func (b *budgetMemory) has(w currency.AccountID) bool {
	_, ok := b.m.Load(w)
	return ok
}

// remember notes w's budget, and forgets, at most once every
// pruneBudgetsEvery, those of periods ended by now.
func (b *budgetMemory) remember(w currency.AccountID, ends, now time.Time) {
	b.m.Store(w, ends)
	b.mu.Lock()
	defer b.mu.Unlock()
	if now.Sub(b.lastPruned) < pruneBudgetsEvery {
		return
	}
	b.lastPruned = now
	b.m.Range(func(k, v any) bool {
		if end := v.(time.Time); !end.IsZero() && !end.After(now) {
			b.m.Delete(k)
		}
		return true
	})
}

func (b *budgetMemory) len() int {
	n := 0
	b.m.Range(func(any, any) bool { n++; return true })
	return n
}
