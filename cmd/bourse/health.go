package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/bourse/bourse/exchange"
)

// serveMetrics serves reg at addr/metrics, with the probes an orchestrator
// asks beside it, until the returned stop is called.
func serveMetrics(addr string, reg *prometheus.Registry, ready func(context.Context) error, log *slog.Logger) (func(), error) {
	if addr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics listener: %w", err)
	}
	srv := &http.Server{Handler: metricsMux(reg, ready), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server", "err", err)
		}
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}

// metricsMux serves /metrics; /healthz, 200 while the process serves at
// all (restart it otherwise); and /readyz, 200 while ready says it can do
// its work, else 503 with the reason (send it no traffic meanwhile).
func metricsMux(reg *prometheus.Registry, ready func(context.Context) error) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := ready(ctx); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	return mux
}

// exchangeReady says whether an exchange instance can take requests: its
// NATS connection is up and its database answers a read.
func exchangeReady(nc *nats.Conn, store exchange.Store) func(context.Context) error {
	return func(ctx context.Context) error {
		if s := nc.Status(); s != nats.CONNECTED {
			return fmt.Errorf("NATS is %s", s)
		}
		if _, err := store.Ledger().Currencies(ctx); err != nil {
			return fmt.Errorf("the database: %w", err)
		}
		return nil
	}
}
