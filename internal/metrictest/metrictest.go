// Package metrictest reads counters from a Prometheus registry, as tests
// check what the exchange counted.
package metrictest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Counter is counter name in reg: the sum of its series whose labels
// include every name, value pair of labels (all its series with none);
// 0 where reg has no such series.
func Counter(t testing.TB, reg prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	if len(labels)%2 != 0 {
		t.Fatalf("metrictest: labels come in name, value pairs: %q", labels)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("metrictest: gather: %v", err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if has(m, labels) {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// has says whether m carries every name, value pair of labels.
func has(m *dto.Metric, labels []string) bool {
	for i := 0; i < len(labels); i += 2 {
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
