package treasury

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/allowance"
)

// The scheduler: one loop drives every scheduled action of the treasury,
// allowances, top-ups and spend-rate refills, on every exchange instance
// (and in the demo). Running it on every instance at once is safe, and is
// how it survives an instance's loss: each action is idempotent by its
// key and decides its amount in the transaction that moves it, so two
// instances at once, on either side of a period's or a step's edge, do
// each thing once. `bourse admin schedule run` runs one round of it, for
// cron or by hand.

// DefaultEvery is how often an exchange instance runs the scheduler
// unless told otherwise (bourse exchange --schedule-every).
const DefaultEvery = 10 * time.Second

// AllowancesPaid says when and where allowances are paid: the one account
// of it that bourse admin allowance --help and the console's Allowances
// page give (docs/operations.md's "Allowances" says the same, which a
// test holds it to).
const AllowancesPaid = "Every bourse exchange instance pays each allowance period that has ended, " +
	"every --schedule-every (10s by default); where no exchange runs, bourse admin schedule run " +
	"(or allowance run) does it, by hand or from cron. Each period is paid once, under its own key, " +
	"however many instances and runs there are. The payments are on the wallet's statement " +
	"(memo \"allowance, period N\"); the audit trail records the rules."

// Ran is what one round of the scheduler did.
type Ran struct {
	Allowances map[currency.AccountID][]allowance.Paid `json:"allowances,omitempty"`
	TopUps     []ToppedUp                              `json:"topups,omitempty"`
	Refills    []Refill                                `json:"refills,omitempty"`
}

// Scheduler runs the treasury's scheduled actions. Its zero value is not
// usable; use NewScheduler.
type Scheduler struct {
	t     *Treasury
	actor string

	mu sync.Mutex
	// paidTo is, for each allowance rule's version, the number of periods
	// that had ended at this scheduler's last successful payment of it:
	// a rule is read from the ledger again only when another has ended.
	paidTo map[string]int64
}

// NewScheduler returns a scheduler of t's actions that acts as actor (the
// name the trail gives its top-ups and refills).
func NewScheduler(t *Treasury, actor string) *Scheduler {
	return &Scheduler{t: t, actor: actor, paidTo: map[string]int64{}}
}

// Run does one round at now: pays every allowance period that has ended,
// tops up every wallet below its threshold and refills every bucket for
// the steps passed. One failure does not stop the others; the first error
// is returned with what was done.
func (s *Scheduler) Run(ctx context.Context, now time.Time) (Ran, error) {
	var ran Ran
	var errs []error
	var err error
	if ran.Allowances, err = s.payAllowances(ctx, now); err != nil {
		errs = append(errs, err)
	}
	if ran.TopUps, err = s.t.RunTopUps(ctx, s.actor, now); err != nil {
		errs = append(errs, err)
	}
	if ran.Refills, err = s.t.RunSpendRates(ctx, s.actor, now); err != nil {
		errs = append(errs, err)
	}
	return ran, errors.Join(errs...)
}

// payAllowances pays each rule whose period count has grown since this
// scheduler last paid it: a run reads a wallet's statement, so a loop
// every few seconds reads each once a period, not once a round.
func (s *Scheduler) payAllowances(ctx context.Context, now time.Time) (map[currency.AccountID][]allowance.Paid, error) {
	rules, err := s.t.Allowances(ctx)
	if err != nil {
		return nil, err
	}
	out := map[currency.AccountID][]allowance.Paid{}
	var errs []error
	for _, r := range rules {
		ended := int64(now.Sub(r.Start) / cmp.Or(r.Period, time.Hour))
		id := allowance.Key(r.Wallet, r.Version, 0)
		s.mu.Lock()
		done := s.paidTo[id] >= ended
		s.mu.Unlock()
		if done {
			continue
		}
		paid, err := allowance.AccrueWith(ctx, s.t.l, r, now, s.t.payer(r))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var fresh []allowance.Paid
		for _, p := range paid {
			if p.New {
				fresh = append(fresh, p)
			}
		}
		if len(fresh) > 0 {
			out[r.Wallet] = fresh
		}
		if int64(len(paid)) == ended { // all paid: not stopped by the store's clock
			s.mu.Lock()
			s.paidTo[id] = ended
			s.mu.Unlock()
		}
	}
	return out, errors.Join(errs...)
}

// Loop runs a round every every until ctx ends, logging failures (a
// database away for a while is retried at the next round).
func (s *Scheduler) Loop(ctx context.Context, every time.Duration, log *slog.Logger) {
	tick := time.NewTicker(every) //wallclock: pacing: wakes the scheduler; what is due is read on the store's clock
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			ran, err := s.Run(ctx, now)
			if err != nil && ctx.Err() == nil {
				log.Warn("treasury scheduler", "err", err)
			}
			if n := len(ran.Allowances) + len(ran.TopUps) + len(ran.Refills); n > 0 {
				log.Debug("treasury scheduler", "allowances", len(ran.Allowances), "topups", len(ran.TopUps), "refills", len(ran.Refills))
			}
		}
	}
}
