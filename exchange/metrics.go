package exchange

import "github.com/prometheus/client_golang/prometheus"

// metrics are the exchange's Prometheus series, all prefixed bourse_exchange_.
type metrics struct {
	offers      *prometheus.CounterVec // by outcome: contract, countered, rejected, error
	negotiation prometheus.Histogram   // seconds from offer to reply
	settled     *prometheus.CounterVec // by reason
	voided      prometheus.Counter
	readings    *prometheus.CounterVec // by result: counted, stale, rejected
	escrowed    prometheus.Counter     // contracts opened
	busy        prometheus.Counter     // offers refused for MaxInFlight
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		offers: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bourse_exchange_offers_total",
			Help: "Offers answered, by outcome."}, []string{"outcome"}),
		negotiation: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "bourse_exchange_negotiation_seconds",
			Help: "Time from an offer's arrival to its answer.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}),
		settled: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bourse_exchange_settled_total",
			Help: "Contracts settled, by stop reason."}, []string{"reason"}),
		voided: prometheus.NewCounter(prometheus.CounterOpts{Name: "bourse_exchange_voided_total",
			Help: "Contracts voided before they started."}),
		readings: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bourse_exchange_readings_total",
			Help: "Usage readings received, by result."}, []string{"result"}),
		escrowed: prometheus.NewCounter(prometheus.CounterOpts{Name: "bourse_exchange_contracts_opened_total",
			Help: "Contracts accepted and escrowed."}),
		busy: prometheus.NewCounter(prometheus.CounterOpts{Name: "bourse_exchange_busy_total",
			Help: "Requests refused because too many were in flight."}),
	}
	if reg != nil {
		reg.MustRegister(m.offers, m.negotiation, m.settled, m.voided, m.readings, m.escrowed, m.busy)
	}
	return m
}
