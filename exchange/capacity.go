package exchange

import (
	"slices"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// anyModel names, in market data, what asks for no model and what the
// exchange cannot pin to one.
const anyModel = "any"

// gpuCount is how many GPUs of a model there are, and how many are free.
type gpuCount struct{ gpus, free int }

// capacity counts the GPUs of the live servers by currency and model. A
// heartbeat says how many of a server's GPUs are free, not which: a
// server with GPUs of several models has its free GPUs counted against
// its GPUs in index order.
func (r *registry) capacity() map[string]map[string]gpuCount {
	r.mu.Lock()
	defer r.mu.Unlock()
	cutoff := r.cutoff() // live as routing counts it, through this instance's own outage
	out := map[string]map[string]gpuCount{}
	for _, s := range r.servers {
		if !s.live(cutoff) {
			continue
		}
		byModel := out[s.Currency]
		if byModel == nil {
			byModel = map[string]gpuCount{}
			out[s.Currency] = byModel
		}
		gpus := slices.Clone(s.GPUs)
		slices.SortFunc(gpus, func(a, b contract.GPU) int { return a.Index - b.Index })
		free := s.Free
		for _, g := range gpus {
			c := byModel[g.Model]
			c.gpus++
			if free > 0 {
				c.free++
				free--
			}
			byModel[g.Model] = c
		}
	}
	return out
}

// model is the GPU model a contract of t on server counts under in market
// data: the one its terms ask for, else the one model of the server's GPUs
// that fit them, else anyModel (the server is not heard from, or has
// several models that fit).
func (r *registry) model(server string, t contract.Terms) string {
	if t.Class.Model != "" {
		return t.Class.Model
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.servers[server]
	if !ok {
		return anyModel
	}
	model := ""
	for _, g := range s.GPUs {
		if !t.Class.Fits(g.Model, g.MemoryMiB) {
			continue
		}
		if model != "" && g.Model != model {
			return anyModel
		}
		model = g.Model
	}
	if model == "" {
		return anyModel
	}
	return model
}

// sellers lists the live servers of each currency, by id, with their GPUs
// and how many are free, for market data.
func (r *registry) sellers() map[string][]protocol.MarketServer {
	r.mu.Lock()
	defer r.mu.Unlock()
	cutoff := r.cutoff() // live as routing counts it, through this instance's own outage
	out := map[string][]protocol.MarketServer{}
	for _, id := range r.order {
		s := r.servers[id]
		if !s.live(cutoff) {
			continue
		}
		out[s.Currency] = append(out[s.Currency], protocol.MarketServer{ID: id, GPUs: len(s.GPUs), Free: s.Free, Record: r.record(id)})
	}
	return out
}

// askOrder is one class of a live server's ask as the book's sell side
// counts it: its price and its GPUs free.
type askOrder struct {
	price contract.Price
	gpus  int
}

// askSide is the sell side of the book by currency and model: each class
// of a live server's ask that names a price and has GPUs free, as the
// server last said it (or as took left it), whose server is not named. A
// server not heard from within lostAfter is not routed to, and its ask
// is not counted either.
func (r *registry) askSide() map[string]map[string][]askOrder {
	r.mu.Lock()
	defer r.mu.Unlock()
	cutoff := r.cutoff()
	out := map[string]map[string][]askOrder{}
	for _, s := range r.servers {
		if !s.live(cutoff) || s.Ask == nil {
			continue
		}
		for _, c := range s.Ask.Classes {
			if !c.Priced() || c.Free <= 0 {
				continue
			}
			byModel := out[s.Currency]
			if byModel == nil {
				byModel = map[string][]askOrder{}
				out[s.Currency] = byModel
			}
			byModel[c.Model] = append(byModel[c.Model], askOrder{price: c.Price(), gpus: c.Free})
		}
	}
	return out
}
