package main

import (
	"bytes"
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/exchange/natsvc"
	"github.com/bourse/bourse/market"
	"github.com/bourse/bourse/market/markettest"
	"github.com/bourse/bourse/scenario"
)

// BenchmarkOfferArray times `bourse bid offer --array 1000` against a
// market of one server of 1,000 GPUs that runs programs: each offer is
// routed, accepted by the server, escrowed and started (its job sleeps
// 5 s).
// A fresh market per run, so that every run meets an empty server; with
// the exchange's default limits per client (100 requests a second, 200
// at once after a quiet spell) and without them (docs/benchmarks.md has
// the figures).
//
//	go test ./cmd/bourse -run '^$' -bench OfferArray -benchtime 1x
func BenchmarkOfferArray(b *testing.B) {
	const tasks = 1000
	sleep, err := exec.LookPath("sleep")
	require.NoError(b, err)
	for _, lim := range []struct {
		name   string
		limits natsvc.Limits
	}{{"limits=none", natsvc.Limits{Requests: -1, InFlight: 1 << 20}}, {"limits=default", natsvc.Limits{}}} {
		for _, inFlight := range []int{1, 4, 8, 16, 64} {
			b.Run(lim.name+"/in-flight="+strconv.Itoa(inFlight), func(b *testing.B) {
				for range b.N {
					b.StopTimer()
					m := markettest.Start(b, market.Config{Clients: []scenario.ClientSpec{}, Servers: []scenario.ServerSpec{}, Limits: lim.limits})
					m.Fund("CRED", decimal.NewFromInt(1_000_000), "ada")
					gpu1 := startServer(b, wideNVML(tasks), `
id: gpu1
nvml: required
outbox_dir: `+b.TempDir()+`
nats: {url: `+m.URL()+`}
currency: {code: CRED, scale: 2}
policy: {kind: reserve}
heartbeat: 1s
sample_every: 1m
runner: {kind: process, allowed: [`+sleep+`], output_dir: `+b.TempDir()+`, grace: 1s}
`)
					require.Eventually(b, func() bool { return strings.Contains(gpu1.String(), "msg=registered") }, 10*time.Second, 50*time.Millisecond)
					b.StartTimer()
					began := time.Now()
					var out, errOut bytes.Buffer
					code := run(context.Background(), []string{"bid", "--nats", m.URL(), "--id", "ada", "offer", "--gpus", "1", "--price", "0.50",
						"--time-limit", "10m", "--command", sleep, "--arg=5", "--array", strconv.Itoa(tasks),
						"--in-flight", strconv.Itoa(inFlight)}, &out, &errOut)
					b.StopTimer()
					// A server starved on a loaded machine may miss an
					// offer's deadline: counted, not fatal.
					made := strings.Count(out.String(), " contract ")
					b.ReportMetric(float64(made), "contracts")
					b.Logf("%d offers in %v, %d contracts, exit %d", tasks, time.Since(began).Round(time.Millisecond), made, code)
					require.Equal(b, tasks+1, strings.Count(out.String(), "\n"), "%s%s", out.String(), errOut.String())
					// The jobs end before the server is stopped: 1,000 jobs to
					// kill at once would outlast the cleanup's patience.
					time.Sleep(6 * time.Second)
				}
			})
		}
	}
}

// wideNVML is a mock NVML of n A100s, none of whose processes use it:
// enough GPUs that every offer of a large array is accepted, and cheap
// to meter.
func wideNVML(n int) func(...nvml.LibraryOption) nvml.Interface {
	return func(...nvml.LibraryOption) nvml.Interface {
		lib := dgxa100.New()
		devs := make([]nvml.Device, n)
		for i := range devs {
			d := dgxa100.NewDevice(i)
			d.GetProcessUtilizationFunc = func(uint64) ([]nvml.ProcessUtilizationSample, nvml.Return) { return nil, nvml.SUCCESS }
			d.GetTotalEnergyConsumptionFunc = func() (uint64, nvml.Return) { return 0, nvml.SUCCESS }
			devs[i] = d
		}
		lib.DeviceGetCountFunc = func() (int, nvml.Return) { return n, nvml.SUCCESS }
		lib.DeviceGetHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
			if i < 0 || i >= n {
				return nil, nvml.ERROR_INVALID_ARGUMENT
			}
			return devs[i], nvml.SUCCESS
		}
		return lib
	}
}
