package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/scenario"
	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/server/container"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"github.com/bourse/bourse/market"
	"github.com/bourse/bourse/market/markettest"
)

func writeConfig(t testing.TB, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestServerConfigErrors(t *testing.T) {
	base := "id: s1\ncurrency: {code: CRED, scale: 2}\nnvml: off\ngpus: [{count: 1, model: H100, memory_mib: 81920}]\n"
	for _, tt := range []struct {
		name   string
		config string // appended to base; "" for none
		args   []string
		want   string // the first line of stderr
	}{
		{"NoFile", "", []string{"--config", "/no/such/file.yaml"}, "bourse: server config: open /no/such/file.yaml: no such file or directory"},
		{"UnknownField", "bogus: 1\n", nil, "field bogus not found"},
		{"NotYAML", "[oops\n", nil, "server config"},
		{"BadDuration", "heartbeat: soon\n", nil, "cannot unmarshal !!str `soon` into time.Duration"},
		{"NoID", "", []string{"--id", ""}, "bourse: server config: no id (id in the configuration, or --id)"},
		{"BadCurrency", "", []string{"--currency", "cred!"}, "bourse: server config: currency: currency.Validate: invalid: code: currency code must be"},
		{"BadScale", "", []string{"--scale", "-1"}, "currency"},
		{"BadPolicy", "", []string{"--policy", "auction"}, `bourse: server config: policy "auction": want reserve, utilisation or learning`},
		{"BadK", "policy: {kind: utilisation, k: lots}\n", nil, `bourse: server config: policy.k "lots": want a decimal number`},
		{"KWithPosted", "policy: {k: '1'}\n", nil, "bourse: server config: policy.k is for the utilisation policy"},
		{"BadCurve", "policy: {p: [['2', '1'], ['1', '2']]}\n", nil, "policy: reserve p: contract.Curve.Validate: invalid_curve"},
		{"BadFairUse", "policy: {fair_use: {min_time_limit: 1h, max_time_limit: 1m}}\n", nil, "minimum time limit 1h0m0s is over the maximum"},
		{"BadRunner", "", []string{"--runner", "docker"}, `bourse: server config: runner "docker": want synthetic, process or container`},
		{"ShellRunner", "runner: {kind: process, allowed: [/bin/sh]}\n", nil, "a shell"},
		{"NoPrograms", "runner: {kind: process}\n", nil, "no allowed programs"},
		{"ProgramRunner", "runner: {kind: process, allowed: [/usr/bin/env]}\n", nil, "runs other programs"},
		{"JobUserCountNoPrefix", "runner: {kind: process, allowed: [/bin/sleep], job_user_count: 2}\n", nil, "runner.job_user_count needs runner.job_user_prefix"},
		{"MaxFrozenOverUsers", "runner: {kind: process, allowed: [/bin/sleep], job_users: [nobody, daemon], max_frozen: 3}\n", nil, "runner: process.New: invalid: max_frozen: 3: more than the 2 job users"},
		{"NegativeStoppedTTL", "runner: {kind: process, allowed: [/bin/sleep], stopped_ttl: -1m}\n", nil, "runner: process.New: invalid: stopped_ttl: -1m0s: want how long a frozen job is kept for its resume"},
		{"BadCgroup", "runner: {kind: process, allowed: [/bin/sleep], cgroup: maybe}\n", nil, `cgroup: "maybe": want auto, off or required`},
		{"BadNVML", "", []string{"--nvml", "maybe"}, `bourse: server config: nvml "maybe": want auto, off or required`},
		{"NoGPUs", "", []string{"--gpus", "0xH100:1"}, "bourse: server config: gpus[0]: want a count of at least 1, a model and memory_mib"},
		{"BadGPUsFlag", "", []string{"--gpus", "H100"}, `bourse: --gpus "H100": want COUNTxMODEL:MEMORY_MIB, such as 2xH100:81920`},
		{"NVMLRequired", "", []string{"--nvml", "required"}, "bourse: NVML is required: "},
		{"BadOutbox", "", []string{"--outbox-dir", "/dev/null/outbox"}, "bourse: server config: outbox_dir: mkdir /dev/null: not a directory"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"server"}
			if !strings.Contains(strings.Join(tt.args, " "), "--config") {
				args = append(args, "--config", writeConfig(t, "server.yaml", base+tt.config))
			}
			args = append(args, tt.args...)
			var stdout, stderr bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			want := exitFailure
			if tt.name == "BadGPUsFlag" {
				want = exitUsage // a flag's value, not the configuration
			}
			if code := run(ctx, args, &stdout, &stderr); code != want {
				t.Fatalf("exit status %d, want %d; stderr %q", code, want, stderr.String())
			}
			first := strings.SplitN(stderr.String(), "\n", 2)[0]
			if !strings.Contains(first, tt.want) {
				t.Errorf("stderr %q, want it to hold %q", first, tt.want)
			}
		})
	}
}

// TestServerJobUsersSecrets: where jobs run as users of their own, the
// agent refuses to start with a configuration or credentials file that
// another user may read, and says which and how to mend it.
func TestServerJobUsersSecrets(t *testing.T) {
	base := "id: s1\ncurrency: {code: CRED, scale: 2}\nnvml: off\ngpus: [{count: 1, model: H100, memory_mib: 81920}]\n" +
		"meter_fallback: full_use\nrunner: {kind: process, allowed: [/bin/sleep], job_users: [nobody]}\n"
	for _, tt := range []struct {
		name string
		mode os.FileMode
		want string
	}{
		{"WorldReadable", 0o644, "is readable by every user (mode 0644): chmod o-rwx"},
		{"GroupReadable", 0o640, "is readable by its group"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := writeConfig(t, "server.yaml", base)
			if err := os.Chmod(path, tt.mode); err != nil {
				t.Fatal(err)
			}
			if tt.mode&0o040 != 0 {
				// A group that is neither root's nor the agent's.
				if err := os.Chown(path, -1, 65534); err != nil {
					t.Skipf("cannot give the file another group: %v", err)
				}
			}
			var stdout, stderr bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if code := run(ctx, []string{"server", "--config", path}, &stdout, &stderr); code != 1 {
				t.Fatalf("exit status %d, want 1; stderr %q", code, stderr.String())
			}
			if first := strings.SplitN(stderr.String(), "\n", 2)[0]; !strings.Contains(first, tt.want) || !strings.Contains(first, "--config") {
				t.Errorf("stderr %q, want it to name --config and hold %q", first, tt.want)
			}
		})
	}
}

func TestParseServerConfigJSON(t *testing.T) {
	cfg, err := parseServerConfig("s.json", []byte(`{"id": "s1", "currency": {"code": "CRED", "scale": 2},
		"gpus": [{"count": 2, "model": "A100", "memory_mib": 40960}],
		"policy": {"kind": "utilisation", "p": [["0", "0.1"]], "k": "2"},
		"runner": {"kind": "process", "allowed": ["/bin/sleep"], "output_cap": 1024, "grace": "3s"},
		"sample_every": "500ms"}`))
	if err != nil {
		t.Fatal(err)
	}
	gpus, err := cfg.declaredGPUs()
	if err != nil || len(gpus) != 2 || gpus[1].Index != 1 || gpus[1].Model != "A100" {
		t.Errorf("GPUs %+v, %v", gpus, err)
	}
	if cfg.Runner.Grace != 3*time.Second || cfg.SampleEvery != 500*time.Millisecond || cfg.Runner.OutputCap != 1024 {
		t.Errorf("config %+v", cfg)
	}
	p, err := cfg.policy()
	if err != nil || p.(interface{ String() string }).String() != "utilisation" {
		t.Errorf("policy %v, %v", p, err)
	}
}

// TestNoDriver: where NVML's Init fails the server says so, plainly, and
// uses the declared GPUs; without any it refuses to start.
func TestNoDriver(t *testing.T) {
	noLib := func(...nvml.LibraryOption) nvml.Interface {
		return &mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }}
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg, err := parseServerConfig("s.yaml", []byte("gpus: [{count: 2, model: H100, memory_mib: 81920}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	gpus, meter, why, err := cfg.gpusAndMeter(noLib, log)
	if err != nil || meter != nil || len(gpus) != 2 {
		t.Fatalf("gpusAndMeter = %v, %v, %v", gpus, meter, err)
	}
	if want := "no NVIDIA driver (NVML: library not found)"; why != want {
		t.Errorf("why %q, want %q", why, want)
	}
	cfg.GPUs = nil
	if _, _, _, err := cfg.gpusAndMeter(noLib, log); err == nil || !strings.Contains(err.Error(), "no GPUs are declared") {
		t.Errorf("without declared GPUs: %v", err)
	}
}

// TestServerSettles runs `bourse server` against a market with an exchange
// and one bidder but no servers of its own: the bidder's contracts can
// only be ours, and one must settle.
func TestServerSettles(t *testing.T) {
	ctx := context.Background()
	clients := scenario.DefaultClients()[:1] // ada: H100s
	m := markettest.Start(t, market.Config{Servers: []scenario.ServerSpec{}, Clients: clients, JobScale: 0.3})

	outbox := t.TempDir()
	config := writeConfig(t, "server.yaml", `
outbox_dir: `+outbox+`
id: gpu-1
nats: {url: `+m.URL()+`}
currency: {code: CRED, scale: 2}
nvml: auto
gpus: [{count: 2, model: H100, memory_mib: 81920}]
policy: {kind: reserve, p: [["0", "0.01"]]}
runner: {kind: synthetic}
heartbeat: 200ms
`)
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var stdout, stderr bytes.Buffer
	exited := make(chan int, 1)
	go func() { exited <- run(sctx, []string{"server", "--config", config}, &stdout, &stderr) }()

	deadline := time.Now().Add(30 * time.Second)
	for {
		if s := m.Tally.Snapshot().Servers["gpu-1"]; s.GPUSeconds.IsPositive() {
			break
		}
		select {
		case code := <-exited:
			t.Fatalf("the server exited with %d: %s", code, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("no contract settled on gpu-1 in 30s; snapshot %+v\nserver log:\n%s", m.Tally.Snapshot(), stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	m.Close() // the bidders stop, and the running contracts settle
	cancel()  // SIGTERM, as far as the command can tell
	select {
	case code := <-exited:
		if code != 0 {
			t.Errorf("exit status %d after a stop; stderr:\n%s", code, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the server did not stop")
	}
	out := stderr.String()
	if !strings.Contains(out, "msg=registered") || !strings.Contains(out, "msg=stopped") {
		t.Errorf("the server's log lacks its registration or a stopped contract:\n%s", out)
	}
	rep, err := m.Ledger.Audit(ctx)
	if err != nil || !rep.OK() {
		t.Errorf("audit: %v\n%s", err, rep)
	}
	if _, err := os.Stat(filepath.Join(outbox, "readings.log")); err != nil {
		t.Errorf("the readings went around the outbox: %v", err)
	}
}

// TestServerPolicyLayers checks that preempt and fair_use wrap the base
// policy in the documented order: preemption first, fair use outermost.
func TestServerPolicyLayers(t *testing.T) {
	c, err := parseServerConfig("server.yaml", []byte("policy: {kind: utilisation, k: '1', preempt: true, bookings: {max_ahead: 168h, one_per_client: true}, fair_use: {max_running: 2, cooldown: 1m}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	pol, err := c.policy()
	if err != nil {
		t.Fatal(err)
	}
	fu, ok := pol.(server.FairUse)
	if !ok || fu.MaxRunning != 2 || fu.Cooldown != time.Minute {
		t.Fatalf("outermost policy %#v, want FairUse{MaxRunning: 2, Cooldown: 1m}", pol)
	}
	bk, ok := fu.Base.(server.Bookings)
	if !ok || bk.MaxAhead != 168*time.Hour || !bk.OnePerClient {
		t.Fatalf("under fair use %#v, want Bookings{MaxAhead: 168h, OnePerClient: true}", fu.Base)
	}
	pre, ok := bk.Base.(server.Preempting)
	if !ok {
		t.Fatalf("under bookings %#v, want Preempting", bk.Base)
	}
	if _, ok := pre.Base.(server.Utilization); !ok {
		t.Fatalf("under preemption %#v, want Utilization", pre.Base)
	}
	plain, err := (&serverConfig{}).policy()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := plain.(server.Posted); !ok {
		t.Fatalf("default policy %#v, want a bare Posted", plain)
	}
}

// TestExampleGraceWithinStopGrace: the example servers stop a job (SIGTERM
// to SIGKILL) a few seconds within the exchange's default --stop-grace,
// as docs/operations.md asks, so that a killed job's final reading
// counts.
func TestExampleGraceWithinStopGrace(t *testing.T) {
	for _, name := range []string{"gpu-node.yaml", "container-node.yaml"} {
		c, err := loadServerConfig(filepath.Join("..", "..", "examples", "server", name))
		require.NoError(t, err)
		assert.LessOrEqual(t, c.Runner.Grace+5*time.Second, exchange.DefaultStopGrace, name)
	}
}

// TestServerExampleConfig keeps examples/server/gpu-node.yaml valid.
func TestServerExampleConfig(t *testing.T) {
	c, err := loadServerConfig(filepath.Join("..", "..", "examples", "server", "gpu-node.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.policy(); err != nil {
		t.Fatal(err)
	}
	if c.ID != "gpu1" || c.Runner.Kind != "process" || !c.Policy.Preempt || c.Policy.FairUse.MaxRunning != 2 ||
		c.Runner.FilesBytes != 1<<30 || c.Runner.FilesCount != 100_000 || c.Runner.StoppedTTL != 10*time.Minute || c.Runner.MaxFrozen != 3 {
		t.Errorf("the example reads as %+v", c)
	}
}

// TestServerContainerConfig keeps examples/server/container-node.yaml
// valid, and reads it as the container runner and its image store take
// it; a build without an image store says so rather than starting.
func TestServerContainerConfig(t *testing.T) {
	c, err := loadServerConfig(filepath.Join("..", "..", "examples", "server", "container-node.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	r := c.Runner
	if r.Kind != "container" || r.Runtime != "runc" || r.Pids != 4096 || r.MemoryPerGPU != 64<<30 || r.TmpBytes != 8<<30 ||
		r.Network != "none" || len(r.CDIDirs) != 2 || r.JobUserCount != 8 || r.FilesBytes != 1<<30 || r.StoppedTTL != 10*time.Minute || r.MaxFrozen != 7 {
		t.Errorf("the example's runner reads as %+v", r)
	}
	want := container.StoreConfig{Allowed: []string{"ghcr.io/acme", "docker.io/library"}, CacheDir: "/var/cache/bourse/images",
		CacheBytes: 100 << 30, MaxBytes: 10 << 30, MaxUnpackedBytes: 30 << 30, CredentialsFile: "/etc/bourse/registries.json"}
	if got := c.storeConfig(); !reflect.DeepEqual(got, want) {
		t.Errorf("the image store's configuration is %+v, want %+v", got, want)
	}
	c.Runner.Images.CacheDir = t.TempDir()
	c.Runner.Images.Allowed = []string{"acme"} // no registry named
	_, err = c.containerRunner(openImages, nil, nil, "", nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err == nil || !strings.Contains(err.Error(), "runner.images: image store") {
		t.Errorf("an image source without a registry: %v", err)
	}
}

// TestServerConfigClaimFor: claim_for is how long an accept claims the
// server's GPUs; hold_for, its name before, is still read, with a warning,
// so that a configuration written for the release before still starts.
func TestServerConfigClaimFor(t *testing.T) {
	t.Run("ClaimFor", func(t *testing.T) {
		cfg, err := parseServerConfig("s.yaml", []byte("claim_for: 3s\n"))
		if err != nil || cfg.ClaimFor != 3*time.Second || len(cfg.deprecated) != 0 {
			t.Errorf("claim_for: %v, deprecated %v, %v", cfg.ClaimFor, cfg.deprecated, err)
		}
	})
	t.Run("HoldForDeprecated", func(t *testing.T) {
		cfg, err := parseServerConfig("s.yaml", []byte("hold_for: 3s\n"))
		if err != nil || cfg.ClaimFor != 3*time.Second {
			t.Errorf("hold_for read as claim_for %v, %v", cfg.ClaimFor, err)
		}
		var log bytes.Buffer
		cfg.warnDeprecated(slog.New(slog.NewTextHandler(&log, nil)))
		if !strings.Contains(log.String(), "level=WARN") || !strings.Contains(log.String(), "hold_for is deprecated: name it claim_for") {
			t.Errorf("warning: %s", log.String())
		}
	})
	t.Run("ClaimForWins", func(t *testing.T) {
		cfg, err := parseServerConfig("s.yaml", []byte("claim_for: 2s\nhold_for: 3s\n"))
		if err != nil || cfg.ClaimFor != 2*time.Second {
			t.Errorf("claim_for %v, %v", cfg.ClaimFor, err)
		}
	})
	t.Run("WarnedAtStart", func(t *testing.T) {
		// bourse server warns before anything else (here the missing id
		// stops it).
		file := filepath.Join(t.TempDir(), "old.yaml")
		if err := os.WriteFile(file, []byte("hold_for: 3s\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		code := run(context.Background(), []string{"server", "--config", file}, &out, &errOut)
		if code == 0 || !strings.Contains(errOut.String(), "hold_for is deprecated: name it claim_for") {
			t.Errorf("exit %d, stderr %s", code, errOut.String())
		}
	})
}
