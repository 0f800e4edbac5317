package caps

import (
	"sync"
	"time"

	"github.com/bourse/bourse/currency"
)

// Periods says which period of every spend cap is under way, by the clock
// it is given, and remembers the budgets it has made for the periods under
// way (Admit). It is safe for concurrent use. The House and the treasury
// of one process share one.
type Periods struct {
	now  func() time.Time
	made made
}

// NewPeriods returns the periods told by now, which must not be nil: the
// wall clock (time.Now) for a market, a virtual one for the simulator.
func NewPeriods(now func() time.Time) *Periods {
	if now == nil {
		panic("caps: NewPeriods needs a clock")
	}
	return &Periods{now: now}
}

// Now is the clock that decides which period is under way.
func (p *Periods) Now() time.Time { return p.now() }

// Budget is the budget of owner's spend cap of period in cur for the
// period under way.
func (p *Periods) Budget(owner string, cur currency.Code, period Period) currency.AccountID {
	return BudgetWallet(owner, cur, period, p.now())
}

// pruneMadeEvery is how often the memory of budgets made forgets those
// of periods that have ended: a window's budget is one wallet per owner
// per hour, day or month, and an exchange runs for months.
const pruneMadeEvery = time.Minute

// made remembers the budgets made, each with the end of its period (zero
// for a bucket, which never ends), and forgets those whose period has
// ended: no offer asks for them again, since an offer's budget is its
// period's now.
type made struct {
	m          sync.Map // currency.AccountID → time.Time
	mu         sync.Mutex
	lastPruned time.Time
}

func (b *made) has(w currency.AccountID) bool {
	_, ok := b.m.Load(w)
	return ok
}

// remember notes w's budget, and forgets, at most once every
// pruneMadeEvery, those of periods ended by now.
func (b *made) remember(w currency.AccountID, ends, now time.Time) {
	b.m.Store(w, ends)
	b.mu.Lock()
	defer b.mu.Unlock()
	if now.Sub(b.lastPruned) < pruneMadeEvery {
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

func (b *made) len() int {
	n := 0
	b.m.Range(func(any, any) bool { n++; return true })
	return n
}
