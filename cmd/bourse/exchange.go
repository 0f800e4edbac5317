package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/natsvc"
	"github.com/bourse/bourse/signing"
	"github.com/bourse/bourse/treasury"
)

func newExchangeCmd() *cobra.Command {
	var (
		natsURL, dbURL, metricsAddr string
		cpuprof                     string
		login                       natsLogin
		cfg                         natsvc.Config
		tls                         natsTLS
		serverKeys                  string
		scheduleEvery               time.Duration
		mem                         throwaway
	)
	cmd := &cobra.Command{
		Use:   "exchange",
		Short: "Run an exchange instance against NATS and a database",
		Long: `exchange runs one instance of the exchange: the NATS micro service
"bourse-exchange" that negotiates offers, escrows prepayments, consumes usage
readings and settles contracts. Run several against one NATS cluster and one
database to share the load; each is stateless. It logs with slog to stderr,
serves Prometheus metrics on --metrics, and on SIGTERM stops taking requests,
finishes those in flight and exits.

--db mem runs it on a throwaway in-memory ledger, lost when it stops, which
no bourse admin can reach: it starts with the currency --mem-currency (CRED
at 2 places unless said) and the wallets --fund opens and funds.

  bourse exchange --db mem --fund you=100 --fund bob=50`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tuneGC()
			if dbURL == "" {
				return usagef("--db (or $DATABASE_URL) is required: the ledger's postgres:// URL, or mem for a throwaway one")
			}
			if err := mem.check(cmd.Flags(), dbURL); err != nil {
				return err
			}
			stopProfile, err := cpuProfile(cpuprof)
			if err != nil {
				return err
			}
			defer stopProfile() // at SIGTERM too: the context ends, and RunE returns
			ctx := cmd.Context()
			log := commandLogger(cmd)
			loginOpts, err := login.options()
			if err != nil {
				return err
			}
			store, closeStore, err := openStore(ctx, dbURL, log)
			if err != nil {
				return err
			}
			defer closeStore()
			opts := []nats.Option{nats.Name("bourse-exchange"), nats.MaxReconnects(-1),
				// nats.go waits 2 s between tries by default, which made
				// most of an exchange's outage after a NATS restart;
				// the jitter spreads instances and agents that all lost
				// the same server.
				nats.ReconnectWait(250 * time.Millisecond), nats.ReconnectJitter(500*time.Millisecond, time.Second),
				nats.DisconnectErrHandler(func(_ *nats.Conn, err error) { log.Warn("NATS disconnected", "err", err) }),
				nats.ReconnectHandler(func(c *nats.Conn) { log.Info("NATS reconnected", "url", c.ConnectedUrl()) })}
			opts = append(opts, loginOpts...)
			tlsOpts, err := tls.options()
			if err != nil {
				return err
			}
			if serverKeys != "" {
				keys, err := signing.OpenKeyFile(serverKeys)
				if err != nil {
					return err
				}
				cfg.Verifier = keys
				log.Info("readings must be signed", "servers", keys.Len(), "keys", serverKeys)
				// SIGHUP reads the file again: a rotated server's new
				// key, a revoked server's gone, without a restart.
				stop := onHUP("server keys", keys.Reload, log)
				defer stop()
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
			if dbURL == "mem" {
				if err := mem.setUp(ctx, t, log); err != nil {
					return err
				}
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
			dbReady := exchangeReady(nc, store)
			ready := func(ctx context.Context) error { // out of the queue group, or the database away now
				return errors.Join(svc.Ready(ctx), dbReady(ctx))
			}
			stopMetrics, err := serveMetrics(metricsAddr, reg, ready, log)
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
	bindEnv(f, "nats", "BOURSE_NATS_URL")
	login.addFlags(f)
	tls.addFlags(f)
	f.StringVar(&serverKeys, "server-keys", "", `file of the servers' public signing keys ("ID KEY" a line): readings must then carry their server's signature; SIGHUP reads it again`)
	f.StringVar(&dbURL, "db", "", `ledger database: postgres://… (PostgreSQL or CockroachDB; the password may come from $PGPASSWORD or ~/.pgpass instead of the URL), or "mem" for a throwaway in-memory ledger (with --fund)`)
	bindEnv(f, "db", "DATABASE_URL")
	mem.addFlags(f)
	f.StringVar(&metricsAddr, "metrics", "127.0.0.1:9464", `address for Prometheus metrics at /metrics, and /healthz and /readyz for probes ("" for none)`)
	f.StringVar(&cpuprof, "cpuprofile", "", "write a CPU profile of the process to this file until it stops (go tool pprof reads it): what an exchange spends its CPU on under load")
	f.DurationVar(&scheduleEvery, "schedule-every", treasury.DefaultEvery, "how often the treasury's scheduled actions run: allowances, top-ups, spend-rate refills (0: none on this instance)")
	f.DurationVar(&cfg.Negotiation, "negotiation", 2*time.Second, "how long servers have to answer an offer")
	f.IntVar(&cfg.RouteTo, "route-to", exchange.DefaultRouteTo, "the most servers an offer goes to: those with room whose asks it meets, cheapest first (docs/protocol.md, routing)")
	f.IntVar(&cfg.FanOut, "fan-out", 1, "how many of those servers are asked at once: the next once one refuses, or beside one slow to answer (docs/protocol.md, negotiation)")
	f.DurationVar(&cfg.StartTimeout, "start-timeout", 15*time.Second, "accepted contracts not started by then are voided")
	f.DurationVar(&cfg.PrepareTimeout, "prepare-timeout", 10*time.Minute, "how long a server may prepare a job before it starts it (pull its container image), past the start timeout; such jobs escrow their prepayment that much longer")
	f.DurationVar(&cfg.ServerLostAfter, "server-lost-after", 10*time.Second, "silence after which a running contract is settled as server lost")
	f.DurationVar(&cfg.ReadingEvery, "reading-every", time.Second, "how often servers are told to publish readings")
	f.IntVar(&cfg.HeartbeatsPerSecond, "heartbeats-per-second", natsvc.DefaultHeartbeatsPerSecond, "how many heartbeats a second the servers send in all while nothing changes: past that many servers each heartbeats less often than every second (docs/protocol/server.md, heartbeats; -1: every second whatever the fleet)")
	f.DurationVar(&cfg.ClockSkew, "clock-skew", 5*time.Second, "how far a reading's, hello's or heartbeat's time may be off the exchange's clock")
	f.DurationVar(&cfg.AckWait, "ack-wait", 0, "how long the usage stream waits for an acknowledgement before it redelivers a reading (default (server-lost-after − reading-every)/2)")
	f.DurationVar(&cfg.StopGrace, "stop-grace", exchange.DefaultStopGrace, "how long after a client's kill or suspend the exchange believes the server's readings; then the contract settles on its last one (at least the servers' SIGTERM-to-SIGKILL grace, plus a few seconds)")
	f.DurationVar(&cfg.StuckLimit, "stuck-limit", time.Hour, "how long a contract may fail to settle before it ends by the fixed rule (reason expired)")
	f.DurationVar(&cfg.MarketEvery, "market-every", 5*time.Second, "how often market data is published on bourse.v1.market.<currency> (by one instance of those running)")
	f.DurationVar(&cfg.MarketWindow, "market-window", time.Hour, "how far back market data counts the contracts settled")
	f.DurationVar(&cfg.CanaryWindow, "canary-window", exchange.DefaultCanaryWindow, "how far back a server's record counts its canary audits (bourse admin canary), which demote a meter that lies")
	f.IntVar(&cfg.BookPerClient, "book-per-client", 16, "the most offers one client may have waiting in the book")
	f.IntVar(&cfg.BookTotal, "book-total", 10_000, "the most offers the book holds in all; a full book takes an offer sure to pay more than the last of its currency, which leaves")
	f.IntVar(&cfg.MatchBatch, "match-batch", 100, "the most waiting offers of a currency one matching pass negotiates")
	f.IntVar(&cfg.MatchScan, "match-scan", 1000, "the most waiting offers of a currency one matching pass reads")
	f.DurationVar(&cfg.MatchGap, "match-gap", time.Second, "the least time between two matching passes of a currency that servers' heartbeats make due")
	f.DurationVar(&cfg.RematchEvery, "rematch-every", 30*time.Second, "how often every server with free GPUs is offered the book, and how long a server's refusal of a waiting offer stands while it has no more GPUs free")
	f.IntVar(&cfg.StreamReplicas, "stream-replicas", 1, "replicas of the usage stream (3 on a NATS cluster)")
	f.DurationVar(&cfg.JetStreamWait, "jetstream-wait", 2*time.Minute, "how long to wait, retrying, for JetStream to create the usage stream at start (a NATS cluster just started has no leader for a while)")
	f.Int64Var(&cfg.StreamMaxBytes, "stream-max-bytes", 1<<30, "bytes of readings the usage stream holds while they wait for the exchange; past it servers keep them")
	f.Int64Var(&cfg.StreamPerContract, "stream-per-contract", 100_000, "readings of one contract the usage stream holds while they wait")
	f.DurationVar(&cfg.Output.MaxAge, "output-max-age", 7*24*time.Hour, "how long jobs' output (logs and results) is kept for their clients")
	f.Int64Var(&cfg.Output.MaxBytes, "output-max-bytes", 256<<20, "each server's quota: bytes of its jobs' output its own output stream holds; past it that server's oldest goes first (JetStream reserves servers × this)")
	f.Int64Var(&cfg.Files.Quota, "files-quota", 1<<30, "each client's files bucket: bytes of its jobs' files it holds at once; past it that client's puts are refused (JetStream reserves clients × this)")
	f.Int64Var(&cfg.Files.MaxBytes, "files-max-bytes", 0, "the largest files an offer may name (default the quota; -1: keep no files, and refuse offers with files)")
	f.DurationVar(&cfg.Files.MaxAge, "files-max-age", 24*time.Hour, "how long a client's files are kept after they were put, if no contract's end removes them first")
	f.Int64Var(&cfg.FilesRate, "files-rate", exchange.DefaultFilesRate, "the least rate, in bytes a second, at which a server fetches a job's files: a contract with files has their size at this rate longer to start")
	f.Float64Var(&cfg.Limits.Requests, "party-rate", 100, "requests a second one client or server may make on average, across the market (each instance allows its share; -1: no limit)")
	f.IntVar(&cfg.Limits.Burst, "party-burst", 200, "requests one client or server may make at once after a quiet spell")
	f.IntVar(&cfg.Limits.InFlight, "client-in-flight", 64, "offers, suspends and kills of one client in negotiation at once, across the market (each instance allows its share)")
	f.Float64Var(&cfg.Limits.Readings, "server-reading-rate", 200, "usage readings a second one server may send on average (-1: no limit)")
	f.IntVar(&cfg.Limits.ReadingBurst, "server-reading-burst", 2000, "usage readings one server may send at once")
	return cmd
}
