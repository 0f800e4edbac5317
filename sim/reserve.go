package sim

import (
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/scenario"
	"github.com/bourse/bourse/server"
)

// reserves follows what each contract's server asked when it accepted,
// so that the results can put what the servers asked beside what the
// contracts paid: a contract charges its client's offered curves, which
// a posted price only bounds from below, and a price index far above the
// reserve is the clients' bids, not the servers' prices.
type reserves struct {
	policies map[string]server.Policy
	gpus     map[string][]contract.GPU
	open     map[string]server.Posted // by contract, from accepted to ended
}

func (r *reserves) addServer(s scenario.ServerSpec) {
	if r.policies == nil {
		r.policies, r.gpus, r.open = map[string]server.Policy{}, map[string][]contract.GPU{}, map[string]server.Posted{}
	}
	r.policies[s.ID], r.gpus[s.ID] = s.Policy, s.GPUs()
}

// accepted notes the reserve of c's server as it decided: its policy in
// a view of as many GPUs free as the market's capacity says it had.
func (m *Simulation) acceptedReserve(c *contract.Contract) {
	r := &m.reserves
	gpus := r.gpus[c.Server]
	free := 0
	if s := m.free.byID[c.Server]; s != nil {
		free = min(max(s.free, 0), len(gpus))
	}
	if p, ok := server.Reserve(r.policies[c.Server], server.View{GPUs: gpus, Free: gpus[:free]}); ok {
		r.open[c.ID] = p
	}
}

// endedReserve counts what c's use would have cost at its reserve, if it
// settled on a reading, and forgets the contract.
func (m *Simulation) endedReserve(c *contract.Contract) {
	p, ok := m.reserves.open[c.ID]
	delete(m.reserves.open, c.ID)
	if !ok || c.State != contract.StateSettled || c.Reading == nil {
		return
	}
	t := c.Terms
	t.P, t.Q = p.P, p.Q
	due, err := contract.Due(t, c.Reading.Usage(), scenario.Currency.Scale)
	if err != nil {
		return // the reserve is a valid curve; a reading the House settled on prices
	}
	m.m.Reserve(due.InexactFloat64())
}
