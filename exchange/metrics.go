package exchange

import "github.com/prometheus/client_golang/prometheus"

// metrics are the exchange's Prometheus series, all prefixed bourse_exchange_.
type metrics struct {
	offers      *prometheus.CounterVec // by outcome: contract, queued, countered, rejected, error
	negotiation prometheus.Histogram   // seconds from offer to reply
	settled     *prometheus.CounterVec // by reason
	voided      prometheus.Counter
	readings    *prometheus.CounterVec // by result: counted, stale, rejected, refused, foreign_id
	escrowed    prometheus.Counter     // contracts opened
	stuck       prometheus.Counter     // contracts that began to fail to settle or void
	stuckNow    prometheus.Gauge       // contracts holding escrow that are stuck now
	heartbeats  *prometheus.CounterVec // heartbeats ignored, by why
	quotes      *prometheus.CounterVec // by outcome: accepted, countered, rejected, no_match, error
	book        *prometheus.CounterVec // waiting offers by what happened: queued, matched, and why they left
	// matchPasses counts passes over a currency's book, matchAsked the
	// waiting offers they negotiated.
	matchPasses prometheus.Counter
	matchAsked  prometheus.Counter
	// asked is how many servers each offer and waiting offer was sent
	// to (none where asks answered it).
	asked prometheus.Histogram
	// readingsLate counts sweeps that found a running contract's
	// readings silent and did not judge it, by why: its server's
	// heartbeat said it runs it ("heartbeat") or holds its final reading
	// ("settling"), or its server's readings waited in the Backlog
	// ("waiting").
	readingsLate *prometheus.CounterVec
	// stopsOverdue counts contracts the sweep settled at their
	// client's stop plus the stop grace (contract.Stop).
	stopsOverdue prometheus.Counter
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
		stuck: prometheus.NewCounter(prometheus.CounterOpts{Name: "bourse_exchange_stuck_total",
			Help: "Contracts that began to fail to settle or void (each counted once)."}),
		stuckNow: prometheus.NewGauge(prometheus.GaugeOpts{Name: "bourse_exchange_stuck_contracts",
			Help: "Contracts that hold their escrow and have failed to settle or void, as the store says (the same on every instance)."}),
		heartbeats: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bourse_exchange_heartbeats_ignored_total",
			Help: "Heartbeats ignored, by why: malformed, in a currency the server has not registered in (unregistered), or stale: its at is off the exchange's clock by more than the clock-skew allowance, or not after the server's last heartbeat heard (a copy replayed)."}, []string{"why"}),
		quotes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bourse_exchange_quotes_total",
			Help: "Quotes answered from the servers' asks, by outcome: accepted (some server's ask is met), countered, unpriced (only servers naming no price would be asked), rejected, no_match, error."}, []string{"outcome"}),
		book: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bourse_exchange_book_total",
			Help: "Waiting offers, by event: queued, matched (a contract), or why they left: cancelled, expired, insufficient_funds, cap_exceeded, invalid, outbid."}, []string{"event"}),
		readingsLate: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bourse_exchange_readings_late_total",
			Help: "Times the sweep found a running contract's readings silent past server_lost_after and judged it again at the next sweep, by why: its server's heartbeat listed it as running (heartbeat) or as settling, its final reading held by the server until the exchange's receipt (settling), another instance heard its server list it so while this one did not (elsewhere: this instance is cut off from the server), or readings its server sent in the last twice server_lost_after still waited in the usage stream (waiting)."}, []string{"why"}),
		stopsOverdue: prometheus.NewCounter(prometheus.CounterOpts{Name: "bourse_exchange_stops_overdue_total",
			Help: "Contracts the sweep settled at their client's kill or suspend plus the stop grace: their server had not settled them (it ignored the stop, or its final reading came too late)."}),
	}
	m.matchPasses = prometheus.NewCounter(prometheus.CounterOpts{Name: "bourse_exchange_match_passes_total",
		Help: "Passes over a currency's book offering its waiting offers to servers with room."})
	m.asked = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "bourse_exchange_servers_asked",
		Help: "Servers an offer was sent to (0: its servers' asks answered it).", Buckets: []float64{0, 1, 2, 4, 8, 16, 32, 64}})
	m.matchAsked = prometheus.NewCounter(prometheus.CounterOpts{Name: "bourse_exchange_match_asked_total",
		Help: "Waiting offers negotiated with servers by matching passes."})
	if reg != nil {
		reg.MustRegister(m.matchPasses, m.matchAsked, m.asked)
		reg.MustRegister(m.offers, m.negotiation, m.settled, m.voided, m.readings, m.escrowed,
			m.stuck, m.stuckNow, m.heartbeats, m.quotes, m.book, m.readingsLate, m.stopsOverdue)
	}
	return m
}
