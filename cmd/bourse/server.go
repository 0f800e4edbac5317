package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/bourse/bourse/bidder"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/server/agent"
	"github.com/bourse/bourse/server/nvmlmeter"
	"github.com/bourse/bourse/server/process"
	"github.com/bourse/bourse/server/spool"
	"github.com/bourse/bourse/signing"
)

// serverConfig is the server's configuration file, YAML or JSON (which
// YAML reads too). Flags override it.
type serverConfig struct {
	ID   string `yaml:"id"`
	NATS struct {
		URL       string `yaml:"url"`
		natsLogin `yaml:",inline"`
		natsTLS   `yaml:",inline"`
	} `yaml:"nats"`
	// Currency is what the server sells for: CRED at 2 decimal places
	// unless said, as bourse bid's; the exchange refuses a scale that is
	// not its ledger's.
	Currency struct {
		Code  string `yaml:"code"`
		Scale *int32 `yaml:"scale"`
	} `yaml:"currency"`
	// NVML is auto (use it where the driver is, else the declared GPUs),
	// off, or required.
	NVML string `yaml:"nvml"`
	// MeterFallback is what measures process jobs where NVML cannot:
	// none (the default: they are refused) or full_use (server_meter.go).
	MeterFallback string `yaml:"meter_fallback"`
	// GPUs are declared, for machines without NVML: groups of count GPUs.
	GPUs []struct {
		Count     int    `yaml:"count"`
		Model     string `yaml:"model"`
		MemoryMiB int    `yaml:"memory_mib"`
	} `yaml:"gpus"`
	Policy server.PolicyConfig `yaml:"policy"`
	Runner struct {
		Kind       string            `yaml:"kind"` // synthetic, process or container
		Allowed    []string          `yaml:"allowed"`
		AllowShell bool              `yaml:"allow_shell"`
		Env        map[string]string `yaml:"env"`
		AllowEnv   []string          `yaml:"allow_env"`
		OutputDir  string            `yaml:"output_dir"`
		OutputCap  int64             `yaml:"output_cap"`
		Grace      time.Duration     `yaml:"grace"`
		// StoppedTTL is how long a job frozen by a suspend is kept for
		// its resume, and MaxFrozen how many are kept at once
		// (process.Config's; server/process/frozen.go).
		StoppedTTL time.Duration `yaml:"stopped_ttl"`
		MaxFrozen  int           `yaml:"max_frozen"`
		// ResultsCap and OutputKeep bound what the spool keeps and sends
		// of each job's output (server_output.go).
		ResultsCap int64         `yaml:"results_cap"`
		OutputKeep time.Duration `yaml:"output_keep"`
		// JobUsers, and JobUserPrefix numbered 0 … JobUserCount-1, are the
		// Unix users jobs run as, and Cgroup whether each gets a cgroup
		// (server_users.go).
		JobUsers      []string `yaml:"job_users"`
		JobUserPrefix string   `yaml:"job_user_prefix"`
		JobUserCount  int      `yaml:"job_user_count"`
		Cgroup        string   `yaml:"cgroup"`
		// FilesBytes bounds a job's files, fetched and unpacked into its
		// working folder (1 GiB if 0; negative: no files), FilesCount
		// their entries (process.DefaultFilesCount if 0).
		FilesBytes int64 `yaml:"files_bytes"`
		FilesCount int64 `yaml:"files_count"`
		// The container runner's own (server_container.go).
		containerSettings `yaml:",inline"`
	} `yaml:"runner"`
	SampleEvery  time.Duration `yaml:"sample_every"`
	Heartbeat    time.Duration `yaml:"heartbeat"`
	ReadingEvery time.Duration `yaml:"reading_every"`
	// SigningKey signs every reading (a seed file, bourse admin
	// signing-key, or a credentials file); empty signs with nats.creds
	// where there is one, and otherwise not at all.
	SigningKey string `yaml:"signing_key"`
	// ClaimFor is how long an accept claims its GPUs for the exchange's
	// start (server.DefaultClaimFor if zero).
	ClaimFor time.Duration `yaml:"claim_for"`
	// DeprecatedHoldFor is claim_for by its old name, hold_for, read with a warning
	// (deprecated) so that a configuration written for the release before
	// still starts.
	DeprecatedHoldFor time.Duration `yaml:"hold_for"`
	// OutboxDir keeps readings on disk until JetStream has them, across
	// NATS outages and restarts; empty keeps them in memory only.
	OutboxDir string `yaml:"outbox_dir"`
	// Metrics is where the agent serves its own Prometheus metrics at
	// /metrics (the agent's, the Go runtime's, and what a learning policy
	// believes: server_learning.go), and /healthz and /readyz for probes;
	// empty for none.
	Metrics string `yaml:"metrics"`

	deprecated []deprecatedKey // keys given by an old name, to warn of
	file       string          // the file it was read from, if any
}

func newServerCmd() *cobra.Command { return newServerCmdOn(nvml.New, openImages) }

// newServerCmdOn is bourse server with openNVML to load NVML (nvml.New,
// or in tests go-nvml's mock) and openImages to open the container
// runner's image store.
func newServerCmdOn(openNVML func(...nvml.LibraryOption) nvml.Interface, openImages imageStore) *cobra.Command {
	var (
		file   string
		fl     serverConfig
		gpus   string
		scale  int32
		prices priceFlags // server_policy.go
	)
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run a GPU server's agent",
		Long: `server runs the agent of a GPU node: it registers with the exchange over
NATS, decides on offers with its policy, runs accepted jobs (as processes, or
synthetic ones) and reports their usage until each contract settles.

The configuration comes from --config (YAML or JSON) and flags, which win.
It sells for CRED at 2 decimal places unless --currency and --scale say
otherwise; the exchange refuses a scale that is not its ledger's.

GPUs are discovered through NVML, which also meters the process runner's
jobs (the SM use of each job's own processes). Where there is no NVIDIA
driver the GPUs must be declared (--gpus 2xH100:81920), and then: the
synthetic runner's jobs are metered by their own profile (the synthetic
meter); the process runner refuses jobs, unless --meter-fallback full_use
charges them as if their GPUs were busy all the time (U = GPUs × T). Its
first lines say which meter it has and why.

On SIGTERM it stops taking offers, stops its jobs and sends their final
readings.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tuneGC()
			cfg, err := loadServerConfig(file)
			if err != nil {
				return err
			}
			if err := cfg.override(cmd, fl, gpus, scale); err != nil {
				return err
			}
			if err := prices.apply(cmd, &cfg); err != nil {
				return err
			}
			return runServer(cmd, cfg, openNVML, openImages)
		},
	}
	f := cmd.Flags()
	f.StringVar(&file, "config", "", "configuration file (YAML or JSON)")
	f.StringVar(&fl.ID, "id", "", "the server's id, its NATS identity")
	bindEnv(f, "id", "BOURSE_SERVER_ID")
	f.StringVar(&fl.NATS.URL, "nats", "", "NATS server URL(s), comma-separated (default "+nats.DefaultURL+")")
	bindEnv(f, "nats", "BOURSE_NATS_URL")
	fl.NATS.natsLogin.addFlags(f)
	fl.NATS.natsTLS.addFlags(f)
	f.StringVar(&fl.Metrics, "metrics", "", `address for the agent's own Prometheus metrics at /metrics (a learning policy's beliefs among them), and /healthz and /readyz for probes, e.g. 127.0.0.1:9465 (default none)`)
	f.StringVar(&fl.SigningKey, "signing-key", "", "sign readings with this key (seed or credentials file; default: nats creds, if any)")
	f.StringVar(&fl.Currency.Code, "currency", "", "the currency it takes (default "+bidder.DefaultCurrency+")")
	f.Int32Var(&scale, "scale", defaultScale, "the currency's decimal places, as the exchange's ledger has them")
	f.StringVar(&fl.NVML, "nvml", "", "auto, off or required (default auto)")
	f.StringVar(&fl.MeterFallback, "meter-fallback", "", "where NVML cannot meter process jobs: none (refuse them) or full_use (charge U = GPUs × T) (default none)")
	f.StringVar(&gpus, "gpus", "", "declared GPUs where there is no NVML: COUNTxMODEL:MEMORY_MIB, comma-separated")
	f.StringVar(&fl.Policy.Kind, "policy", "", "reserve, utilisation or learning (default reserve)")
	prices.add(f)
	f.StringVar(&fl.Runner.Kind, "runner", "", "synthetic, process or container (default synthetic)")
	f.StringSliceVar(&fl.Runner.Allowed, "allow", nil, "a program process jobs may run (repeatable)")
	f.StringVar(&fl.Runner.OutputDir, "output-dir", "", "where process jobs' output goes")
	f.StringSliceVar(&fl.Runner.JobUsers, "job-users", nil, "the Unix users process jobs run as, one job at a time each (comma-separated; the agent must be root)")
	f.StringVar(&fl.Runner.Cgroup, "cgroup", "", "a cgroup v2 per process job: auto (where one can be made), off or required (default auto)")
	f.Int64Var(&fl.Runner.OutputCap, "output-cap", 0, "bytes of stdout and of stderr kept per job")
	f.Int64Var(&fl.Runner.ResultsCap, "results-cap", 0, "bytes of the files a job leaves in $BOURSE_RESULTS sent to its client (default 64 MiB)")
	f.DurationVar(&fl.Runner.OutputKeep, "output-keep", 0, "how long a job's output stays on this disk once its client can fetch it (default 24h)")
	f.DurationVar(&fl.SampleEvery, "sample-every", 0, "how often NVML is sampled (default 1s)")
	f.DurationVar(&fl.Heartbeat, "heartbeat", 0, "heartbeat interval until the exchange says (default 1s)")
	f.StringVar(&fl.OutboxDir, "outbox-dir", "", "where readings wait on disk until the exchange's stream has them, and bookings and what a learning policy learned across restarts (default: in memory only)")
	return cmd
}

// policyName is how the policy names itself, else the configuration's
// kind: never a Go type's name.
func policyName(p server.Policy, kind string) string {
	if s, ok := p.(fmt.Stringer); ok {
		return s.String()
	}
	return cmp.Or(kind, "reserve")
}

// redactURLs is comma-separated URLs without the passwords they hold.
func redactURLs(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		parts[i] = redact(strings.TrimSpace(p))
	}
	return strings.Join(parts, ",")
}

// defaultScale is a currency's decimal places unless said: CRED's, as
// bourse bid and bourse admin currency take it.
const defaultScale = 2

// loadServerConfig reads the file, refusing fields it does not know.
func loadServerConfig(path string) (serverConfig, error) {
	var cfg serverConfig
	if path == "" {
		return cfg, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return cfg, fmt.Errorf("server config: %w", err)
	}
	cfg, err = parseServerConfig(path, data)
	cfg.file = path
	return cfg, err
}

func parseServerConfig(name string, data []byte) (serverConfig, error) {
	var cfg serverConfig
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
		// yaml lists type errors on lines of their own; one line reads better.
		var te *yaml.TypeError
		if errors.As(err, &te) {
			return cfg, fmt.Errorf("server config %s: %s", name, strings.Join(te.Errors, "; "))
		}
		return cfg, fmt.Errorf("server config %s: %w", name, err)
	}
	if cfg.DeprecatedHoldFor != 0 {
		cfg.ClaimFor = cmp.Or(cfg.ClaimFor, cfg.DeprecatedHoldFor)
		cfg.DeprecatedHoldFor = 0
		cfg.deprecated = append(cfg.deprecated, deprecatedKey{old: "hold_for", new: "claim_for"})
	}
	return cfg, nil
}

// deprecatedKey is a configuration key read under its old name.
type deprecatedKey struct{ old, new string }

// warnDeprecated logs each key the configuration gave by an old name.
func (c *serverConfig) warnDeprecated(log *slog.Logger) {
	for _, k := range c.deprecated {
		log.Warn("server config: "+k.old+" is deprecated: name it "+k.new, "key", k.old, "use", k.new)
	}
}

// override applies the flags that were set, on the command line or in the
// environment.
func (c *serverConfig) override(cmd *cobra.Command, fl serverConfig, gpus string, scale int32) error {
	set := func(flag string) bool { return given(cmd.Flags(), flag) }
	str := func(flag string, dst *string, v string) {
		if set(flag) {
			*dst = v
		}
	}
	str("id", &c.ID, fl.ID)
	str("nats", &c.NATS.URL, fl.NATS.URL)
	str("nats-user", &c.NATS.User, fl.NATS.User)
	// A password given outside the file replaces the file's, in either form.
	if set("nats-password") || set("nats-password-file") {
		c.NATS.Password, c.NATS.PasswordFile = fl.NATS.Password, fl.NATS.PasswordFile
	}
	str("nats-creds", &c.NATS.Creds, fl.NATS.Creds)
	str("nats-ca", &c.NATS.CA, fl.NATS.CA)
	str("nats-cert", &c.NATS.Cert, fl.NATS.Cert)
	str("nats-key", &c.NATS.Key, fl.NATS.Key)
	str("signing-key", &c.SigningKey, fl.SigningKey)
	str("currency", &c.Currency.Code, fl.Currency.Code)
	str("nvml", &c.NVML, fl.NVML)
	str("meter-fallback", &c.MeterFallback, fl.MeterFallback)
	str("policy", &c.Policy.Kind, fl.Policy.Kind)
	str("runner", &c.Runner.Kind, fl.Runner.Kind)
	str("output-dir", &c.Runner.OutputDir, fl.Runner.OutputDir)
	str("cgroup", &c.Runner.Cgroup, fl.Runner.Cgroup)
	str("outbox-dir", &c.OutboxDir, fl.OutboxDir)
	str("metrics", &c.Metrics, fl.Metrics)
	if set("scale") {
		c.Currency.Scale = &scale
	}
	if set("allow") {
		c.Runner.Allowed = fl.Runner.Allowed
	}
	if set("job-users") {
		c.Runner.JobUsers, c.Runner.JobUserPrefix, c.Runner.JobUserCount = fl.Runner.JobUsers, "", 0
	}
	if set("output-cap") {
		c.Runner.OutputCap = fl.Runner.OutputCap
	}
	if set("results-cap") {
		c.Runner.ResultsCap = fl.Runner.ResultsCap
	}
	if set("output-keep") {
		c.Runner.OutputKeep = fl.Runner.OutputKeep
	}
	if set("sample-every") {
		c.SampleEvery = fl.SampleEvery
	}
	if set("heartbeat") {
		c.Heartbeat = fl.Heartbeat
	}
	if set("gpus") {
		c.GPUs = c.GPUs[:0]
		for _, g := range strings.Split(gpus, ",") {
			var n, mem int
			var model string
			count, rest, ok1 := strings.Cut(strings.TrimSpace(g), "x")
			model, memStr, ok2 := strings.Cut(rest, ":")
			_, err1 := fmt.Sscan(count, &n)
			_, err2 := fmt.Sscan(memStr, &mem)
			if !ok1 || !ok2 || err1 != nil || err2 != nil || model == "" {
				return usagef("--gpus %q: want COUNTxMODEL:MEMORY_MIB, such as 2xH100:81920", g)
			}
			c.GPUs = append(c.GPUs, struct {
				Count     int    `yaml:"count"`
				Model     string `yaml:"model"`
				MemoryMiB int    `yaml:"memory_mib"`
			}{n, model, mem})
		}
	}
	return nil
}

// declaredGPUs numbers the declared groups' GPUs from 0.
func (c *serverConfig) declaredGPUs() ([]contract.GPU, error) {
	var out []contract.GPU
	for i, g := range c.GPUs {
		if g.Count < 1 || g.Model == "" || g.MemoryMiB < 0 {
			return nil, fmt.Errorf("server config: gpus[%d]: want a count of at least 1, a model and memory_mib", i)
		}
		for range g.Count {
			out = append(out, contract.GPU{Index: len(out), Model: g.Model, MemoryMiB: g.MemoryMiB})
		}
	}
	return out, nil
}

func (c *serverConfig) policy() (server.Policy, error) {
	pol, err := c.Policy.Build()
	if err != nil {
		return nil, fmt.Errorf("server config: %w", err)
	}
	return pol, nil
}

// gpusAndMeter discovers the GPUs through NVML, or falls back to the
// declared ones where NVML is off or, with nvml auto, unavailable. It
// returns a nil meter without NVML, and why: the start line says it
// (server_meter.go).
func (c *serverConfig) gpusAndMeter(openNVML func(...nvml.LibraryOption) nvml.Interface, log *slog.Logger) (gpus []contract.GPU, m *nvmlmeter.Meter, why string, err error) {
	declared, err := c.declaredGPUs()
	if err != nil {
		return nil, nil, "", err
	}
	switch c.NVML {
	case "off":
		if len(declared) == 0 {
			return nil, nil, "", errors.New("nvml is off and no GPUs are declared (gpus in the configuration, or --gpus)")
		}
		return declared, nil, "nvml is off", nil
	case "", "auto", "required":
	default:
		return nil, nil, "", fmt.Errorf("server config: nvml %q: want auto, off or required", c.NVML)
	}
	m, err = nvmlmeter.Open(openNVML(), nvmlmeter.Config{Interval: c.SampleEvery, Logger: log})
	if err != nil {
		if c.NVML == "required" {
			return nil, nil, "", fmt.Errorf("NVML is required: %w", err)
		}
		if len(declared) == 0 {
			return nil, nil, "", fmt.Errorf("%s, and no GPUs are declared (gpus in the configuration, or --gpus)", err)
		}
		return declared, nil, err.Error(), nil
	}
	if len(declared) > 0 {
		log.Warn("NVML found the GPUs; the declared ones are ignored", "found", len(m.GPUs()), "declared", len(declared))
	}
	return m.GPUs(), m, "", nil
}

func runServer(cmd *cobra.Command, c serverConfig, openNVML func(...nvml.LibraryOption) nvml.Interface, openImages imageStore) error {
	ctx := cmd.Context()
	log := commandLogger(cmd)
	c.warnDeprecated(log)
	if c.ID == "" {
		return errors.New("server config: no id (id in the configuration, or --id)")
	}
	cur := currency.Currency{Code: currency.Code(cmp.Or(c.Currency.Code, bidder.DefaultCurrency)), Scale: defaultScale}
	if c.Currency.Scale != nil {
		cur.Scale = *c.Currency.Scale
	}
	if err := cur.Validate(); err != nil {
		return fmt.Errorf("server config: currency: %w", err)
	}
	policy, err := c.policy()
	if err != nil {
		return err
	}
	switch c.Runner.Kind {
	case "", "synthetic", "process", "container":
	default:
		return fmt.Errorf("server config: runner %q: want synthetic, process or container", c.Runner.Kind)
	}
	if c.OutboxDir != "" {
		// The agent opens it; a directory it cannot make is a mistake of
		// the configuration, better said before anything starts.
		if err := os.MkdirAll(c.OutboxDir, 0o750); err != nil {
			if errors.Is(err, os.ErrPermission) {
				return fmt.Errorf("server config: outbox_dir: %w; as a user other than root, give directories of your own (--outbox-dir ./outbox --output-dir ./jobs)", err)
			}
			return fmt.Errorf("server config: outbox_dir: %w", err)
		}
	}
	gpus, meter, noNVML, err := c.gpusAndMeter(openNVML, log)
	if err != nil {
		return err
	}
	if meter != nil {
		defer meter.Close()
	}
	jobMeter, meterLine, err := c.jobMeter(meter, noNVML, len(gpus))
	if err != nil {
		return err
	}
	var runner server.Runner = &server.Synthetic{}
	var output *spool.Config // the process or container runner's jobs' output, for their clients
	var devices map[int]string
	if meter != nil {
		devices = meter.Devices()
	}
	switch c.Runner.Kind {
	case "process":
		users, err := c.jobUsers(cmd, log)
		if err != nil {
			return err
		}
		pr, err := process.New(process.Config{Allowed: c.Runner.Allowed, AllowShell: c.Runner.AllowShell, Env: c.Runner.Env,
			AllowEnv: c.Runner.AllowEnv, OutputDir: c.Runner.OutputDir, OutputCap: c.Runner.OutputCap,
			Grace: c.Runner.Grace, StoppedTTL: c.Runner.StoppedTTL, MaxFrozen: c.Runner.MaxFrozen, Meter: jobMeter, NoMeter: noNVML, Users: users, Cgroup: c.Runner.Cgroup, Devices: devices, Logger: log,
			FilesBytes: c.Runner.FilesBytes, FilesCount: c.Runner.FilesCount})
		if err != nil {
			return fmt.Errorf("server config: runner: %w", err)
		}
		defer pr.Close()
		runner = pr
		output = c.outputSpool(pr.Host)
		say(cmd, log, "jobs: kept apart by "+pr.Isolation())
	case "container":
		users, err := c.jobUsers(cmd, log)
		if err != nil {
			return err
		}
		cr, err := c.containerRunner(openImages, users, jobMeter, noNVML, devices, log)
		if err != nil {
			return err
		}
		defer cr.Close()
		runner = cr
		output = c.outputSpool(cr.Host)
		say(cmd, log, "jobs: kept apart by "+cr.Isolation())
	}
	opts, err := c.NATS.natsLogin.options()
	if err != nil {
		return fmt.Errorf("server config: nats: %w", err)
	}
	tlsOpts, err := c.NATS.natsTLS.options()
	if err != nil {
		return fmt.Errorf("server config: nats: %w", err)
	}
	opts = append(opts, tlsOpts...)
	cfg := agent.Config{URL: c.NATS.URL, NATSOptions: opts, ID: c.ID, Currency: cur, GPUs: gpus, Policy: policy, Runner: runner,
		ReadingEvery: c.ReadingEvery, Heartbeat: c.Heartbeat, ClaimFor: c.ClaimFor, OutboxDir: c.OutboxDir, Output: output, Logger: log}
	if key := cmp.Or(c.SigningKey, c.NATS.Creds); key != "" {
		s, err := signing.LoadSigner(key)
		if err != nil {
			return fmt.Errorf("server config: signing_key: %w", err)
		}
		cfg.Signer = s
		log.Info("signing readings and accepts", "key", s.PublicKey())
	}
	ag, err := agent.New(cfg)
	if err != nil {
		return err
	}
	reg := serverRegistry(c.ID, policy)
	if err := ag.Register(reg); err != nil {
		return err
	}
	stopMetrics, err := serveMetrics(c.Metrics, reg, func(context.Context) error { return ag.Ready() }, log)
	if err != nil {
		return fmt.Errorf("server config: metrics: %w", err)
	}
	defer stopMetrics()
	say(cmd, log, meterLine)
	say(cmd, log, c.policyLine())
	log.Info("server starting", "id", c.ID, "nats", redactURLs(c.NATS.URL), "gpus", len(gpus), "policy", policyName(policy, c.Policy.Kind),
		"runner", cmp.Or(c.Runner.Kind, "synthetic"), "nvml", meter != nil, "outbox", c.OutboxDir, "metrics", c.Metrics)
	if err := ag.Run(ctx); err != nil {
		return err
	}
	log.Info("server stopped", "id", c.ID)
	return nil
}
