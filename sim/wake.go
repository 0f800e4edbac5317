package sim

import (
	"context"
	"time"
)

// The servers are woken when they have something to do (server.Node's
// Wake: a job's end, a time limit, a prepayment running out, a booked
// slot), by the engine's alarms, keyed by the server's place in m.ids:
// a run's cost follows its events, not its servers × its virtual time.
// Between events nothing is measured, since the synthetic meter's use is
// known in closed form (server.Forecaster); the node still decides every
// stop, at the moment it would have on any tick.

// rewake sets server id's alarm for when its node next has something to
// do, unless one is set for then or sooner.
func (m *Simulation) rewake(id string) {
	at := m.nodes[id].Wake()
	if at.IsZero() {
		return
	}
	k := m.index[id]
	if armed := m.armed[k]; !armed.IsZero() && !armed.After(at) && !armed.Before(m.e.Now()) {
		return
	}
	m.armed[k] = at
	m.e.Alarm(at, k)
}

// alarm ticks the server at key: what is due stops or starts, and the
// server tells the House of its state if it changed; then its next alarm.
func (m *Simulation) alarm(key int) {
	id := m.ids[key]
	if m.armed[key].Equal(m.e.Now()) {
		m.armed[key] = time.Time{}
	}
	if m.tick(id) {
		m.heartbeat(id) // as the agent does soon after a change, polling or not
	}
	m.rewake(id)
}

// heartbeat is the server's hello to the House, as its agent sends one.
func (m *Simulation) heartbeat(id string) {
	_ = m.house.Heartbeat(context.Background(), id, m.nodes[id].Hello(m.e.Now()))
}
