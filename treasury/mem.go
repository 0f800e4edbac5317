package treasury

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/mem"
)

// Mem is the in-memory Store, for the demo and tests, beside an in-memory
// ledger. Commits are serialized by its lock, and each decides and applies
// its operations in one of the ledger's transactions (mem.Ledger.Tx), so
// that the balances a Plan reads and those in Before and After are the
// ones its operations move, whatever the exchange does meanwhile.
type Mem struct {
	l   *mem.Ledger
	now func() time.Time

	mu       sync.Mutex
	actions  []Action // oldest first
	byKey    map[string]int
	settings map[string]map[string]Setting // removed ones kept, with no Value, for their Version
}

var _ Store = (*Mem)(nil)

// NewMem returns an empty store beside l; now is its clock (time.Now if nil).
func NewMem(l *mem.Ledger, now func() time.Time) *Mem {
	if now == nil {
		now = time.Now
	}
	return &Mem{l: l, now: now, byKey: map[string]int{}, settings: map[string]map[string]Setting{}}
}

func (m *Mem) Ledger() currency.Ledger { return m.l }

func (m *Mem) Commit(ctx context.Context, c Change) (Action, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if i, ok := m.byKey[c.Action.Key]; ok && !c.Unrecorded {
		return Replay(m.actions[i], c.Action)
	}
	var done Change
	err := m.l.Tx(ctx, func(ctx context.Context, tx *mem.Tx) error {
		done = c
		done.Action = Begin(c.Action)
		if c.Plan != nil {
			if err := c.Plan(ctx, memView{tx, m}, &done); err != nil {
				return err
			}
		}
		if err := Watch(ctx, tx, done.Watch, done.Action.Before); err != nil {
			return err
		}
		rs, err := tx.Apply(ctx, done.Ops...)
		if err != nil {
			return err
		}
		for _, r := range rs {
			if r.Err != nil {
				return r.Err
			}
		}
		return Watch(ctx, tx, done.Watch, done.Action.After)
	})
	if err != nil {
		return Action{}, false, err
	}
	a := done.Action
	a.At = m.now().UTC().Truncate(time.Microsecond)
	if s := done.Setting; s != nil {
		kind := m.settings[s.Kind]
		if kind == nil {
			kind = map[string]Setting{}
			m.settings[s.Kind] = kind
		}
		old := kind[s.Name]
		NoteSetting(a, s.Kind, old.Value, s.Value)
		kind[s.Name] = Setting{Kind: s.Kind, Name: s.Name, Value: s.Value, SetBy: a.Actor, SetAt: a.At, Version: old.Version + 1}
	}
	if !c.Unrecorded {
		m.byKey[a.Key] = len(m.actions)
		m.actions = append(m.actions, a)
	}
	return a, true, nil
}

// memView is a Plan's view of a Mem commit: the ledger's transaction, and
// the settings under the store's lock.
type memView struct {
	*mem.Tx
	m *Mem
}

func (v memView) Setting(_ context.Context, kind, name string) (Setting, bool, error) {
	s, ok := v.m.settings[kind][name]
	return s, ok && s.Value != "", nil
}

func (v memView) Now() time.Time { return v.m.now() }

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
		if s.Value != "" {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b Setting) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func (m *Mem) Now() time.Time { return m.now() }
