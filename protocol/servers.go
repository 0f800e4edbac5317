package protocol

import (
	"cmp"
	"slices"
	"time"
)

// VerbServers lists the live servers of a currency as they say of
// themselves (bourse.v1.client.<c>.servers), as sinfo does.
const VerbServers = "servers"

// ServersRequest asks for the live servers of Currency (every
// currency's if empty).
type ServersRequest struct {
	Currency string `json:"currency,omitempty"`
}

// ServersReply lists the live servers, by id.
type ServersReply struct {
	Servers []Server `json:"servers"`
}

// Server is a live server as its last hello or heartbeat said: its GPUs,
// how many are free, what it runs, its policy's description and its ask.
type Server struct {
	ID       string `json:"id"`
	Currency string `json:"currency"`
	// GPUs counts the server's GPUs by model and memory; Total is all of
	// them, Free those not running a contract or claimed for one.
	GPUs  []GPUCount `json:"gpus"`
	Total int        `json:"total"`
	Free  int        `json:"free"`
	// Runs is what it runs (runner, meter, programs); nil from a server
	// that does not say, which is offered no program.
	Runs   *Runs  `json:"runs,omitempty"`
	Policy string `json:"policy,omitempty"`
	// Ask is what the server would take now and soon, as its last hello
	// or heartbeat said it (Ask; nil from a server that says none): what
	// the exchange routes offers and answers quotes by.
	Ask  *Ask      `json:"ask,omitempty"`
	Seen time.Time `json:"seen"`
	// Record is how it kept its word lately (Record); nil where the
	// exchange keeps none.
	Record *Record `json:"record,omitempty"`
}

// GPUCount is how many GPUs of one model and memory a server has.
type GPUCount struct {
	Model     string `json:"model"`
	MemoryMiB int    `json:"memory_mib"`
	Count     int    `json:"count"`
}

// ServerOf is server id as hello h, heard at seen, says.
func ServerOf(id string, h Hello, seen time.Time) Server {
	s := Server{ID: id, Currency: h.Currency, Total: len(h.GPUs), Free: h.Free, Runs: h.Runs, Policy: h.Policy, Ask: h.Ask, Seen: seen}
	for _, g := range h.GPUs {
		i := slices.IndexFunc(s.GPUs, func(c GPUCount) bool { return c.Model == g.Model && c.MemoryMiB == g.MemoryMiB })
		if i < 0 {
			s.GPUs = append(s.GPUs, GPUCount{Model: g.Model, MemoryMiB: g.MemoryMiB})
			i = len(s.GPUs) - 1
		}
		s.GPUs[i].Count++
	}
	slices.SortFunc(s.GPUs, func(a, b GPUCount) int {
		return cmp.Or(cmp.Compare(a.Model, b.Model), cmp.Compare(a.MemoryMiB, b.MemoryMiB))
	})
	return s
}
