package agent

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/bourse/bourse/server/outbox"
)

// status is what the agent's own /metrics and /readyz read (bourse
// server --metrics): the exchange's metrics are the market's, and an
// operator watching one GPU node asks the node.
type status struct {
	conn       atomic.Pointer[nats.Conn]
	outbox     atomic.Pointer[outbox.Outbox]
	registered atomic.Bool // the exchange answered a hello
}

// Register adds the agent's gauges to reg, read at each scrape: the
// node's GPUs and those free, the contracts it runs, the readings it
// keeps for the exchange (the disk outbox's, where it has one), whether
// its NATS connection is up and whether the exchange has registered it.
func (a *Agent) Register(reg prometheus.Registerer) error {
	labels := prometheus.Labels{"server": a.id}
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "bourse", Subsystem: "server", Name: name, Help: help, ConstLabels: labels}, f)
	}
	hello := func() (gpus, free, running int) {
		h := a.node.Hello(a.now())
		return len(h.GPUs), h.Free, len(h.Running)
	}
	bool01 := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	for _, c := range []prometheus.Collector{
		gauge("gpus", "GPUs this server sells.", func() float64 { g, _, _ := hello(); return float64(g) }),
		gauge("gpus_free", "GPUs free for a new contract now.", func() float64 { _, f, _ := hello(); return float64(f) }),
		gauge("contracts_running", "Contracts whose jobs run here now.", func() float64 { _, _, r := hello(); return float64(r) }),
		gauge("readings_pending", "Readings kept on disk until the exchange's stream has them (0 without an outbox).", func() float64 {
			if ob := a.status.outbox.Load(); ob != nil {
				return float64(ob.Len())
			}
			return 0
		}),
		gauge("nats_connected", "1 while the NATS connection is up.", func() float64 { return bool01(a.connected()) }),
		gauge("registered", "1 once the exchange has answered this server's hello.", func() float64 { return bool01(a.status.registered.Load()) }),
	} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("agent metrics: %w", err)
		}
	}
	return nil
}

func (a *Agent) connected() bool {
	nc := a.status.conn.Load()
	return nc != nil && nc.Status() == nats.CONNECTED
}

// Ready says whether the agent can take work: connected to NATS and
// registered with the exchange (the reason otherwise), for /readyz.
func (a *Agent) Ready() error {
	switch {
	case !a.connected():
		return errors.New("not connected to NATS")
	case !a.status.registered.Load():
		return errors.New("not registered with the exchange yet (no hello answered)")
	}
	return nil
}
