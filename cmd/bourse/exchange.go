package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/bourse/bourse/exchange/natsvc"
	"github.com/bourse/bourse/signing"
	"github.com/bourse/bourse/treasury"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
)

func newExchangeCmd() *cobra.Command {
	var (
		natsURL, user, password, creds, dbURL, metricsAddr string
		cfg                                                natsvc.Config
		tls                                                natsTLS
		serverKeys                                         string
		scheduleEvery                                      time.Duration
	)
	cmd := &cobra.Command{
		Use:   "exchange",
		Short: "Run an exchange instance against NATS and a database",
		Long: `exchange runs one instance of the exchange: the NATS micro service
"bourse-exchange" that negotiates offers, escrows prepayments, consumes usage
readings and settles contracts. Run several against one NATS cluster and one
database to share the load; each is stateless. It logs with slog to stderr,
serves Prometheus metrics on --metrics, and on SIGTERM stops taking requests,
finishes those in flight and exits.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tuneGC()
			ctx := cmd.Context()
			log := commandLogger(cmd)
			store, closeStore, err := openStore(ctx, dbURL, log)
			if err != nil {
				return err
			}
			defer closeStore()
			opts := []nats.Option{nats.Name("bourse-exchange"), nats.MaxReconnects(-1),
				nats.DisconnectErrHandler(func(_ *nats.Conn, err error) { log.Warn("NATS disconnected", "err", err) }),
				nats.ReconnectHandler(func(c *nats.Conn) { log.Info("NATS reconnected", "url", c.ConnectedUrl()) })}
			if user != "" {
				opts = append(opts, nats.UserInfo(user, password))
			}
			if creds != "" {
				opts = append(opts, nats.UserCredentials(creds))
			}
			tlsOpts, err := tls.options()
			if err != nil {
				return err
			}
			if serverKeys != "" {
				keys, err := signing.LoadKeys(serverKeys)
				if err != nil {
					return err
				}
				cfg.Verifier = keys
				log.Info("readings must be signed", "servers", len(keys), "keys", serverKeys)
			}
			nc, err := nats.Connect(natsURL, append(opts, tlsOpts...)...)
			if err != nil {
				return fmt.Errorf("connect to NATS at %s: %w", natsURL, err)
			}
			defer nc.Close()

			t, err := openTreasury(ctx, store)
			if err != nil {
				return err
			}
			cfg.SpendCaps, cfg.Periods = t.SpendCaps(5*time.Second), t.Periods()
			if scheduleEvery > 0 {
				// Every instance runs the treasury's scheduler: its actions
				// are each done once whoever gets there first.
				go treasury.NewScheduler(t, "exchange").Loop(ctx, scheduleEvery, log)
			}

			reg := prometheus.NewRegistry()
			reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
			cfg.Conn, cfg.Store, cfg.Logger, cfg.Metrics = nc, store, log, reg
			svc, err := natsvc.Start(ctx, cfg)
			if err != nil {
				return err
			}
			stopMetrics, err := serveMetrics(metricsAddr, reg, log)
			if err != nil {
				svc.Stop()
				return err
			}
			log.Info("exchange running", "nats", nc.ConnectedUrl(), "db", redact(dbURL), "metrics", metricsAddr)
			<-ctx.Done()
			log.Info("exchange stopping")
			svc.Stop()
			stopMetrics()
			if err := nc.Drain(); err != nil {
				log.Warn("drain NATS", "err", err)
			}
			log.Info("exchange stopped")
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&natsURL, "nats", nats.DefaultURL, "NATS server URL(s), comma-separated")
	f.StringVar(&user, "nats-user", "", "NATS user")
	f.StringVar(&password, "nats-password", "", "NATS password")
	f.StringVar(&creds, "nats-creds", "", "NATS credentials file")
	tls.addFlags(f)
	f.StringVar(&serverKeys, "server-keys", "", `file of the servers' public signing keys ("ID KEY" a line): readings must then carry their server's signature`)
	f.StringVar(&dbURL, "db", "", `ledger database: postgres://… (PostgreSQL or CockroachDB), or "mem" for a throwaway in-memory ledger`)
	f.StringVar(&metricsAddr, "metrics", "127.0.0.1:9464", `address for Prometheus metrics at /metrics ("" for none)`)
	f.DurationVar(&scheduleEvery, "schedule-every", 10*time.Second, "how often the treasury's scheduled actions run: allowances, top-ups, spend-rate refills (0: none on this instance)")
	f.DurationVar(&cfg.Negotiation, "negotiation", 2*time.Second, "how long servers have to answer an offer")
	f.DurationVar(&cfg.StartTimeout, "start-timeout", 15*time.Second, "accepted contracts not started by then are voided")
	f.DurationVar(&cfg.ServerLostAfter, "server-lost-after", 10*time.Second, "silence after which a running contract is settled as server lost")
	f.DurationVar(&cfg.ReadingEvery, "reading-every", time.Second, "how often servers are told to publish readings")
	f.DurationVar(&cfg.ClockSkew, "clock-skew", 5*time.Second, "how far a reading's time may run ahead of the exchange's clock")
	f.DurationVar(&cfg.AckWait, "ack-wait", 0, "how long the usage stream waits for an acknowledgement before it redelivers a reading (default (server-lost-after − reading-every)/2)")
	f.DurationVar(&cfg.StuckLimit, "stuck-limit", time.Hour, "how long a contract may fail to settle before it ends by the fixed rule (reason expired)")
	f.IntVar(&cfg.StreamReplicas, "stream-replicas", 1, "replicas of the usage stream (3 on a NATS cluster)")
	f.DurationVar(&cfg.JetStreamWait, "jetstream-wait", 2*time.Minute, "how long to wait, retrying, for JetStream to create the usage stream at start (a NATS cluster just started has no leader for a while)")
	f.Int64Var(&cfg.StreamMaxBytes, "stream-max-bytes", 1<<30, "bytes of readings the usage stream holds while they wait for the exchange; past it servers keep them")
	f.Int64Var(&cfg.StreamPerContract, "stream-per-contract", 100_000, "readings of one contract the usage stream holds while they wait")
	f.DurationVar(&cfg.Output.MaxAge, "output-max-age", 7*24*time.Hour, "how long jobs' output (logs and results) is kept for their clients")
	f.Int64Var(&cfg.Output.MaxBytes, "output-max-bytes", 4<<30, "bytes of jobs' output the output stream holds; past it the oldest goes first")
	f.Float64Var(&cfg.Limits.Rate, "party-rate", 100, "requests a second one client or server may make on average, across the market (each instance allows its share; -1: no limit)")
	f.IntVar(&cfg.Limits.Burst, "party-burst", 200, "requests one client or server may make at once after a quiet spell")
	f.IntVar(&cfg.Limits.InFlight, "client-in-flight", 64, "offers, suspends and kills of one client in negotiation at once, across the market (each instance allows its share)")
	f.Float64Var(&cfg.Limits.Readings, "server-reading-rate", 200, "usage readings a second one server may send on average (-1: no limit)")
	f.IntVar(&cfg.Limits.ReadingBurst, "server-reading-burst", 2000, "usage readings one server may send at once")
	_ = cmd.MarkFlagRequired("db")
	return cmd
}

// serveMetrics serves reg at addr/metrics until the returned stop is called.
func serveMetrics(addr string, reg *prometheus.Registry, log *slog.Logger) (func(), error) {
	if addr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics listener: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
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
