package sim

import "github.com/bourse/bourse/sim/workload"

// capacity is what the market's servers have free, as their heartbeats
// tell the exchange: a waiting job tries again only when some server of
// its model has the GPUs for it, as a client watching the market would,
// rather than offering into a full market on every contract's end.
type capacity struct {
	servers []*slots
	byID    map[string]*slots
}

type slots struct {
	model       string
	free        int
	preemptible int // GPUs held by preemptible jobs, which a guaranteed job may take
}

func (c *capacity) add(id, model string, gpus int) {
	if c.byID == nil {
		c.byID = map[string]*slots{}
	}
	s := &slots{model: model, free: gpus}
	c.servers = append(c.servers, s)
	c.byID[id] = s
}

// take and give follow a job's GPUs from its start to its end.
func (c *capacity) take(server string, gpus int, preemptible bool) {
	if s := c.byID[server]; s != nil {
		s.free -= gpus
		if preemptible {
			s.preemptible += gpus
		}
	}
}

func (c *capacity) give(server string, gpus int, preemptible bool) {
	if s := c.byID[server]; s != nil {
		s.free += gpus
		if preemptible {
			s.preemptible -= gpus
		}
	}
}

// fits says whether some server could take the job now.
func (c *capacity) fits(j *workload.Job) bool {
	for _, s := range c.servers {
		if j.Model != "" && s.model != j.Model {
			continue
		}
		room := s.free
		if !j.Preemptible {
			room += s.preemptible
		}
		if room >= j.GPUs {
			return true
		}
	}
	return false
}
