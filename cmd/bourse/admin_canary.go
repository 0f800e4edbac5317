package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/bidder"
	"github.com/bourse/bourse/canary"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/exchange"
)

// canaryFlags are what bourse admin canary is told: where and who the
// canary's client is (f), the servers, the job and its truth.
type canaryFlags struct {
	f           bidFlags
	servers     []string
	all         bool
	gpus        int
	model       string
	utilization string
	duration    time.Duration
	tolerance   string
	job         string
	price       string
	timeLimit   time.Duration
	wait        time.Duration
	parallel    int
	// verdict is what the canaries found, returned past the client's
	// advice, which is bourse bid's ("is the exchange running?" is no help
	// with a canary that did not settle in time): each server's line
	// says what happened to it.
	verdict error
}

// newAdminCanaryCmd runs canary audits (package canary): as the canary's
// own client over NATS, and on the exchange's database, where it reads the
// contracts as settled and writes the results.
func newAdminCanaryCmd(withStore func(func(context.Context, *cobra.Command, exchange.Store, []string) error) func(*cobra.Command, []string) error) *cobra.Command {
	o := &canaryFlags{}
	cmd := &cobra.Command{
		Use:   "canary --server NAME | --all",
		Short: "Audit servers' meters: run a job of known GPU use on each, as an ordinary client, and judge what it settled on",
		Long: `canary offers a job whose GPU use is known to a server, by name, as an
ordinary client: the canary's own client (--id, its own wallet and NATS user,
named like any client, for servers see its name), a request id like the
command line's, the server's ask as its price (or --price), the whole charge
escrowed. Nothing in the terms says canary; it is paid for from the canary's
wallet like any offer. It waits for the contract to settle, compares the use
it settled on (U, GPU-seconds, and T, the time it ran) with the truth,
within --tolerance, and writes the result to the exchange's database (--db), where
no server or client can write: passed, failed (the meter said more or less
than the job used), or inconclusive (voided, lost, or not settled within
--wait: no one's fault that a canary can tell). The results join each
server's record (bourse bid servers, RECORD) over the exchange's canary
window, a week: a server with a failed canary there is demoted, routed no
offer but one naming it, until it passes two canaries after its latest
failure (passes before a failure do not outweigh it).

The job is synthetic by default: each of --gpus GPUs busy --utilization of
the time for --duration, which a synthetic server meters exactly. Keep the
utilization below 1: the exchange cuts U to GPUs × T, so at full use a meter
that over-reports cannot be seen. For servers that run programs or images,
--job FILE names a job (JSON or YAML, the terms' "job" object: command and
args, or image) whose use --utilization and --duration state, as its
operator knows it on real GPUs (without --duration, the truth is
--utilization of the time it ran, and --time-limit is needed); choose a
--tolerance that covers the meter's noise.

--all audits every live server of --currency that runs the job, --parallel
at a time. Each result prints as a line (or --json); the exit status is 1
if a canary failed, else 3 if a server made no contract of one, else 4 if
one was inconclusive, else 0. Run it on a schedule (a cron job or a systemd
timer, docs/operations.md).`,
		Example: `  bourse admin canary --db postgres://… --nats nats://ex:4222 --id c7e2 \
    --nats-creds c7e2.creds --currency CRED --all
  bourse admin canary --server gpu1 --job burn.yaml --utilization 0.9 \
    --duration 2m --tolerance 0.1 …`,
		Args: cobra.NoArgs,
		RunE: withStore(func(ctx context.Context, cmd *cobra.Command, store exchange.Store, _ []string) error {
			if err := o.f.with(func(ctx context.Context, cmd *cobra.Command, c *bidder.Client, _ []string) error {
				return o.run(ctx, cmd, store, c)
			})(cmd, nil); err != nil {
				return err
			}
			return o.verdict
		}),
	}
	fs := cmd.Flags()
	f := &o.f
	fs.StringVar(&f.natsURL, "nats", nats.DefaultURL, "NATS server URL(s), comma-separated")
	fs.StringVar(&f.id, "id", "", "the canary's client: its own wallet and NATS user, named as any client's")
	bindEnv(fs, "nats", "BOURSE_NATS_URL", "NATS_URL")
	bindEnv(fs, "id", "BOURSE_CANARY_ID")
	f.login.addFlags(fs)
	f.tls.addFlags(fs)
	fs.StringVar(&f.currency, "currency", bidder.DefaultCurrency, "currency the canary pays in, and whose servers --all audits")
	fs.BoolVar(&f.json, "json", false, "print each result as JSON")
	fs.DurationVar(&f.timeout, "timeout", 10*time.Second, "how long to wait for each answer of the exchange")
	fs.StringArrayVar(&o.servers, "server", nil, "a server to audit (repeat for more)")
	fs.BoolVar(&o.all, "all", false, "audit every live server of --currency that runs the job")
	fs.IntVar(&o.gpus, "gpus", 1, "GPUs of the job")
	fs.StringVar(&o.model, "model", "", "GPU model, e.g. H100 (default any)")
	fs.StringVar(&o.utilization, "utilization", canary.DefaultUtilization.String(), "the truth: the busy share of each GPU, in (0, 1]")
	fs.DurationVar(&o.duration, "duration", time.Minute, "the truth: how long the job runs (0 with --job: as long as it ran)")
	fs.StringVar(&o.tolerance, "tolerance", canary.DefaultTolerance.String(), "the relative deviation of U (and of T, where --duration is known) that passes")
	fs.StringVar(&o.job, "job", "", "a job file (JSON or YAML: command and args, or image) whose use --utilization and --duration state; default a synthetic job of them")
	fs.StringVar(&o.price, "price", "", "flat price per GPU-second to offer (default: the server's ask)")
	fs.DurationVar(&o.timeLimit, "time-limit", 0, "the contract's time limit (default twice --duration and a minute)")
	fs.DurationVar(&o.wait, "wait", 0, "how long to wait for the contract to settle before judging it as it stands (default the time limit and 2m)")
	fs.IntVar(&o.parallel, "parallel", 8, "with --all: canaries at once")
	return cmd
}

// canary is the audit the flags describe, for server.
func (o *canaryFlags) canary() (canary.Canary, error) {
	c := canary.Canary{GPUs: o.gpus, Model: o.model, TimeLimit: o.timeLimit, Wait: o.wait}
	var err error
	if c.Truth.Utilization, err = amount("--utilization", o.utilization); err != nil {
		return c, err
	}
	if c.Truth.Tolerance, err = amount("--tolerance", o.tolerance); err != nil {
		return c, err
	}
	c.Truth.Duration = contract.Duration(o.duration)
	if err := c.Truth.Check(); err != nil {
		var e *bourse.Error
		if errors.As(err, &e) {
			return c, usagef("--%s: %s", e.Field, e.Message)
		}
		return c, err
	}
	if o.gpus < 1 {
		return c, usagef("--gpus %d: want at least 1", o.gpus)
	}
	if o.timeLimit > 0 && o.timeLimit < o.duration {
		return c, usagef("--time-limit %v is shorter than --duration %v: the job would be cut short", o.timeLimit, o.duration)
	}
	if o.price != "" {
		p, err := amount("--price", o.price)
		if err != nil {
			return c, err
		}
		c.P = contract.Flat(p)
	}
	if o.job != "" {
		if c.Job, err = readJob(o.job); err != nil {
			return c, err
		}
		if o.duration == 0 && o.timeLimit == 0 {
			return c, usagef("--job of no known --duration needs --time-limit")
		}
	} else if o.duration <= 0 {
		return c, usagef("--duration: a synthetic canary runs for a time")
	}
	return c, nil
}

// readJob reads a job, the terms' "job" object, from a JSON or YAML file,
// by the terms' strict rules.
func readJob(path string) (*contract.JobSpec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, usagef("--job: %w", err)
	}
	ext := strings.ToLower(filepath.Ext(path))
	if ext == ".yaml" || ext == ".yml" || (ext != ".json" && !bytes.HasPrefix(bytes.TrimSpace(data), []byte("{"))) {
		if data, err = yamlToJSON(data); err != nil {
			return nil, usagef("--job %s: %w", path, err)
		}
	}
	t, err := contract.ParseTerms(append(append([]byte(`{"job":`), data...), '}'))
	if err != nil {
		return nil, usagef("--job %s: %w", path, err)
	}
	if t.Job == nil || (t.Job.Command == "" && t.Job.Image == "") {
		return nil, usagef("--job %s: name a command or an image (a synthetic job is the default: leave --job out)", path)
	}
	return t.Job, nil
}

func (o *canaryFlags) run(ctx context.Context, cmd *cobra.Command, store exchange.Store, c *bidder.Client) error {
	if o.all == (len(o.servers) > 0) {
		return usagef("name the servers to audit: --server NAME (repeatable), or --all")
	}
	k, err := o.canary()
	if err != nil {
		return err
	}
	cur, err := store.Ledger().Currency(ctx, currency.Code(o.f.currency))
	if err != nil {
		return err
	}
	r := &canary.Runner{Market: c, Store: store, Client: o.f.id, Currency: o.f.currency, Scale: cur.Scale,
		RequestID: newRequestID, Now: time.Now, Sleep: sleep}
	servers := o.servers
	out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if o.all {
		if servers, err = o.runners(ctx, c, k, errOut); err != nil {
			return err
		}
		if len(servers) == 0 {
			fmt.Fprintf(out, "no live server of %s runs the canary's job\n", o.f.currency)
			return nil
		}
	}
	type outcome struct {
		res canary.Result
		err error
	}
	outcomes := make([]outcome, len(servers))
	var mu sync.Mutex // one result printed at a time
	sem := make(chan struct{}, max(o.parallel, 1))
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			one := k
			one.Server = s
			res, err := r.Run(ctx, one)
			outcomes[i] = outcome{res, err}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				fmt.Fprintf(errOut, "%s: %s\n", s, errorText(err))
				return
			}
			o.print(out, res, cur.Scale)
		})
	}
	wg.Wait()
	var failed, refused, inconclusive int
	var firstErr error
	for _, oc := range outcomes {
		switch {
		case oc.err != nil:
			refused++
			if firstErr == nil {
				firstErr = oc.err
			}
		case oc.res.Verdict == canary.Failed:
			failed++
		case oc.res.Verdict == canary.Inconclusive:
			inconclusive++
		}
	}
	switch {
	case failed > 0:
		o.verdict = fmt.Errorf("%d of %d canaries failed", failed, len(servers))
	case refused > 0:
		var e *bourse.Error
		if !errors.As(firstErr, &e) {
			return firstErr
		}
		// Each was said above, with its server: the summary keeps the
		// first's code, for the exit status.
		o.verdict = &bourse.Error{Code: e.Code, Op: "canary",
			Message: fmt.Sprintf("%d of %d servers made no contract of a canary", refused, len(servers))}
	case inconclusive > 0:
		o.verdict = &bourse.Error{Code: bourse.EUnavailable, Op: "canary", Message: fmt.Sprintf("%d of %d canaries inconclusive: run them again", inconclusive, len(servers))}
	}
	return nil
}

// runners are the live servers of the currency that run k's job on
// enough GPUs of its model; the others are named on errOut.
func (o *canaryFlags) runners(ctx context.Context, c *bidder.Client, k canary.Canary, errOut io.Writer) ([]string, error) {
	ss, err := c.Servers(ctx, o.f.currency)
	if err != nil {
		return nil, err
	}
	job := k.Job
	if job == nil {
		job = k.Truth.Profile()
	}
	var out []string
	for _, s := range ss {
		n := 0
		for _, g := range s.GPUs {
			if k.Model == "" || g.Model == k.Model {
				n = max(n, g.Count)
			}
		}
		switch {
		case n < k.GPUs:
			fmt.Fprintf(errOut, "%s: skipped: fewer than %d GPUs of %s\n", s.ID, k.GPUs, or(k.Model, "one model"))
		case s.Runs != nil && (*contract.Runs)(s.Runs).Refuses(job) != nil:
			fmt.Fprintf(errOut, "%s: skipped: %s\n", s.ID, bourse.ErrorMessage((*contract.Runs)(s.Runs).Refuses(job)))
		case s.Runs == nil && job.Profile == nil:
			fmt.Fprintf(errOut, "%s: skipped: it does not say what it runs\n", s.ID)
		default:
			out = append(out, s.ID)
		}
	}
	return out, nil
}

// print writes a result: a line for people, or one JSON object.
func (o *canaryFlags) print(w io.Writer, r canary.Result, scale int32) {
	if o.f.json {
		_ = o.f.printJSONLine(w, r)
		return
	}
	if !r.Conclusive() {
		fmt.Fprintf(w, "%s\t%s\t%s\tcontract %s\n", safe(r.Server), r.Verdict, safe(r.Why), r.Contract)
		return
	}
	t := ""
	if r.Truth.Duration > 0 {
		t = fmt.Sprintf(", T %v of %v", time.Duration(r.T), time.Duration(r.Truth.Duration))
	}
	fmt.Fprintf(w, "%s\t%s\t%s\tU %s of %s GPU-s%s, charge %s of %s\tcontract %s\n", safe(r.Server), r.Verdict, canary.Percent(r.Deviation),
		r.U.String(), r.ExpectedU.String(), t, currency.Format(r.Charge, scale), currency.Format(r.ExpectedCharge, scale), r.Contract)
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
