package metrictest_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"

	"github.com/bourse/bourse/internal/metrictest"
)

func TestCounter(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "things_total"}, []string{"kind", "where"})
	reg.MustRegister(c)
	c.WithLabelValues("a", "x").Add(2)
	c.WithLabelValues("a", "y").Add(3)
	c.WithLabelValues("b", "x").Add(5)
	assert.Equal(t, 10.0, metrictest.Counter(t, reg, "things_total"), "every series")
	assert.Equal(t, 5.0, metrictest.Counter(t, reg, "things_total", "kind", "a"))
	assert.Equal(t, 3.0, metrictest.Counter(t, reg, "things_total", "kind", "a", "where", "y"))
	assert.Zero(t, metrictest.Counter(t, reg, "things_total", "kind", "c"))
	assert.Zero(t, metrictest.Counter(t, reg, "other_total"))
}
