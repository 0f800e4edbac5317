package treasury

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bourse/bourse/currency"
)

// AtomicLedger is a ledger that can apply several operations as one
// transaction (currency/mem's).
type AtomicLedger interface {
	currency.Ledger
	ApplyAtomic(ctx context.Context, ops ...currency.Op) ([]currency.Result, error)
}

// Mem is the in-memory Store, for the demo and tests, beside an in-memory
// ledger. Commits are serialized by its lock and apply their operations
// with ApplyAtomic; the balances in Before and After are read around them,
// so movements others make at the same moment (a contract settling) can
// show in them too.
type Mem struct {
	l   AtomicLedger
	now func() time.Time

	mu       sync.Mutex
	actions  []Action // oldest first
	byKey    map[string]int
	settings map[string]map[string]Setting
}

var _ Store = (*Mem)(nil)

// NewMem returns an empty store beside l; now is its clock (time.Now if nil).
func NewMem(l AtomicLedger, now func() time.Time) *Mem {
	if now == nil {
		now = time.Now
	}
	return &Mem{l: l, now: now, byKey: map[string]int{}, settings: map[string]map[string]Setting{}}
}

func (m *Mem) Ledger() currency.Ledger { return m.l }

func (m *Mem) Commit(ctx context.Context, c Change) (Action, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if i, ok := m.byKey[c.Action.Key]; ok {
		return Replay(m.actions[i], c.Action)
	}
	a := Begin(c.Action)
	if err := m.watch(ctx, c.Watch, a.Before); err != nil {
		return Action{}, false, err
	}
	if len(c.Ops) > 0 {
		rs, err := m.l.ApplyAtomic(ctx, c.Ops...)
		if err != nil {
			return Action{}, false, err
		}
		for _, r := range rs {
			if r.Err != nil {
				return Action{}, false, r.Err
			}
		}
	}
	if err := m.watch(ctx, c.Watch, a.After); err != nil {
		return Action{}, false, err
	}
	a.At = m.now().UTC().Truncate(time.Microsecond)
	if s := c.Setting; s != nil {
		kind := m.settings[s.Kind]
		if kind == nil {
			kind = map[string]Setting{}
			m.settings[s.Kind] = kind
		}
		NoteSetting(a, s.Kind, kind[s.Name].Value, s.Value)
		if s.Value == "" {
			delete(kind, s.Name)
		} else {
			kind[s.Name] = Setting{Kind: s.Kind, Name: s.Name, Value: s.Value, SetBy: a.Actor, SetAt: a.At}
		}
	}
	m.byKey[a.Key] = len(m.actions)
	m.actions = append(m.actions, a)
	return a, true, nil
}

func (m *Mem) watch(ctx context.Context, ids []currency.AccountID, into map[string]string) error {
	for _, id := range ids {
		b, err := m.l.Balance(ctx, id)
		if err != nil {
			if isNotFound(err) {
				continue
			}
			return err
		}
		into[string(id)] = b.Available.String()
	}
	return nil
}

func (m *Mem) Actions(_ context.Context, before string, limit int) ([]Action, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	end := len(m.actions)
	if before != "" {
		i, ok := m.byKey[before]
		if !ok {
			return nil, notFound("treasury.Actions", "before", "no action with key "+before)
		}
		end = i
	}
	limit = PageLimit(limit)
	var out []Action
	for i := end - 1; i >= 0 && len(out) < limit; i-- {
		out = append(out, m.actions[i])
	}
	return out, nil
}

func (m *Mem) Settings(_ context.Context, kind string) ([]Setting, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Setting
	for _, s := range m.settings[kind] {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Setting) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
