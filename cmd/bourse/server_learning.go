package main

import (
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/bourse/bourse/server"
)

// serverRegistry is what bourse server serves at --metrics: the Go
// runtime's and the process's metrics, and, for a learning policy, what
// it believes.
func serverRegistry(id string, p server.Policy) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if l := server.LearnerOf(p); l != nil {
		reg.MustRegister(newLearningCollector(id, l))
	}
	return reg
}

// learningCollector shows a learning policy's beliefs, read when scraped:
// the multiple of the base price it posts, and per level (labelled by its
// multiplier) how long it was posted and had room, the contracts it won
// and what they earned, and what the learner believes it would earn.
type learningCollector struct {
	l                                                    *server.Learning
	multiplier, epochs                                   *prometheus.Desc
	posted, room, starts, ended, revenue, earnRate, busy *prometheus.Desc
}

func newLearningCollector(id string, l *server.Learning) *learningCollector {
	constant := prometheus.Labels{"server": id}
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("bourse_server_learning_"+name, help, labels, constant)
	}
	return &learningCollector{l: l,
		multiplier: desc("multiplier", "The multiple of the base price the learning policy posts now."),
		epochs:     desc("epochs_total", "Epochs the learning policy has chosen a price for."),
		posted:     desc("posted_seconds", "Seconds each level was posted.", "level"),
		room:       desc("room_seconds", "Seconds each level was posted, weighted by the share of GPUs free.", "level"),
		starts:     desc("starts_total", "Contracts started while each level was posted.", "level"),
		ended:      desc("ended_total", "Of those, contracts ended, whose earnings are known.", "level"),
		revenue:    desc("revenue", "What the ended contracts of each level earned, in the server's currency.", "level"),
		earnRate:   desc("earn_per_hour", "What the learner believes each level would earn an hour were it posted for good.", "level"),
		busy:       desc("busy_gpus", "How many GPUs the learner believes each level would keep busy were it posted for good.", "level"),
	}
}

func (c *learningCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.multiplier, c.epochs, c.posted, c.room, c.starts, c.ended, c.revenue, c.earnRate, c.busy} {
		ch <- d
	}
}

func (c *learningCollector) Collect(ch chan<- prometheus.Metric) {
	b := c.l.Beliefs()
	ch <- prometheus.MustNewConstMetric(c.multiplier, prometheus.GaugeValue, b.Multiplier.InexactFloat64())
	ch <- prometheus.MustNewConstMetric(c.epochs, prometheus.CounterValue, float64(b.Epochs))
	for _, lv := range b.Levels {
		level := lv.Multiplier.String()
		ch <- prometheus.MustNewConstMetric(c.posted, prometheus.CounterValue, lv.Posted, level)
		ch <- prometheus.MustNewConstMetric(c.room, prometheus.CounterValue, lv.Room, level)
		ch <- prometheus.MustNewConstMetric(c.starts, prometheus.CounterValue, float64(lv.Starts), level)
		ch <- prometheus.MustNewConstMetric(c.ended, prometheus.CounterValue, float64(lv.Ended), level)
		ch <- prometheus.MustNewConstMetric(c.revenue, prometheus.CounterValue, lv.Revenue.InexactFloat64(), level)
		ch <- prometheus.MustNewConstMetric(c.earnRate, prometheus.GaugeValue, lv.EarnPerHour, level)
		ch <- prometheus.MustNewConstMetric(c.busy, prometheus.GaugeValue, lv.GPUsBusy, level)
	}
}

// learningLine is the start line of a learning policy: its grid and
// epoch, around the base the rest of policyLine says.
func learningLine(l *server.Learning) string {
	c := l.Config()
	var ms []string
	for _, m := range l.Multipliers() {
		ms = append(ms, "×"+m.String())
	}
	every := fmt.Sprintf("every %v", c.Epoch)
	if c.MaxEpoch > c.Epoch {
		every = fmt.Sprintf("for %v at first, up to %v as it settles", c.Epoch, c.MaxEpoch)
	}
	return fmt.Sprintf("; it learns which multiple earns most (%s), posting one %s", strings.Join(ms, " "), every)
}
