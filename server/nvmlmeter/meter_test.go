package nvmlmeter

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/internal/dectest"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestOpenNoDriver opens the real library: on a machine without the driver
// Init fails with the library not found, and Open calls nothing else.
func TestOpenNoDriver(t *testing.T) {
	m, err := Open(nvml.New(), Config{Logger: quiet()})
	if err == nil {
		_ = m.Close()
		t.Skip("this machine has an NVIDIA driver")
	}
	if !errors.Is(err, ErrNoDriver) {
		t.Fatalf("Open = %v; want ErrNoDriver", err)
	}
	if want := "no NVIDIA driver (NVML: library not found)"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}

// TestInitFailsCallsNothingElse: the mock has only Init; any other call
// would panic.
func TestInitFailsCallsNothingElse(t *testing.T) {
	for _, tt := range []struct {
		ret      nvml.Return
		noDriver bool
		text     string
	}{
		{nvml.ERROR_LIBRARY_NOT_FOUND, true, "no NVIDIA driver (NVML: library not found)"},
		{nvml.ERROR_DRIVER_NOT_LOADED, true, "no NVIDIA driver (NVML: driver not loaded)"},
		{nvml.ERROR_NO_PERMISSION, false, "NVML init: no permission"},
	} {
		t.Run(tt.text, func(t *testing.T) {
			lib := &mock.Interface{InitFunc: func() nvml.Return { return tt.ret }}
			_, err := Open(lib, Config{})
			if err == nil || errors.Is(err, ErrNoDriver) != tt.noDriver || err.Error() != tt.text {
				t.Errorf("Open = %v; want %q, no driver %v", err, tt.text, tt.noDriver)
			}
			if n := len(lib.InitCalls()); n != 1 {
				t.Errorf("Init called %d times", n)
			}
		})
	}
}

func TestModel(t *testing.T) {
	for name, want := range map[string]string{
		"NVIDIA H100 80GB HBM3":            "H100",
		"NVIDIA A100-SXM4-40GB":            "A100",
		"Mock NVIDIA A100-SXM4-40GB":       "A100",
		"NVIDIA A100-SXM4-40GB MIG 1g.5gb": "A100 MIG 1g.5gb",
		"Tesla T4":                         "T4",
		"NVIDIA GeForce RTX 4090":          "GeForce",
	} {
		if got := Model(name); got != want {
			t.Errorf("Model(%q) = %q, want %q", name, got, want)
		}
	}
}

func migSlice(i int) *mock.Device {
	return &mock.Device{
		GetNameFunc:       func() (string, nvml.Return) { return "NVIDIA A100-SXM4-40GB MIG 3g.20gb", nvml.SUCCESS },
		GetMemoryInfoFunc: func() (nvml.Memory, nvml.Return) { return nvml.Memory{Total: 20 << 30}, nvml.SUCCESS },
		GetUUIDFunc:       func() (string, nvml.Return) { return fmt.Sprintf("MIG-%d", i), nvml.SUCCESS },
	}
}

func TestDiscover(t *testing.T) {
	lib := dgxa100.New()
	gpu1 := lib.Devices[1].(*dgxa100.Device)
	gpu1.MigMode = nvml.DEVICE_MIG_ENABLE
	gpu1.GetMaxMigDeviceCountFunc = func() (int, nvml.Return) { return 7, nvml.SUCCESS }
	gpu1.GetMigDeviceHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
		if i < 2 {
			return migSlice(i), nvml.SUCCESS
		}
		return nil, nvml.ERROR_NOT_FOUND
	}
	m, err := Open(lib, Config{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	gpus := m.GPUs()
	if len(gpus) != 9 {
		t.Fatalf("%d GPUs, want 7 whole and 2 slices: %+v", len(gpus), gpus)
	}
	for i, g := range gpus {
		want := contract.GPU{Index: i, Model: "A100", MemoryMiB: 40960}
		if i == 1 || i == 2 {
			want.Model, want.MemoryMiB = "A100 MIG 3g.20gb", 20480
		}
		if g != want {
			t.Errorf("GPU %d = %+v, want %+v", i, g, want)
		}
	}
	devs := m.Devices()
	if devs[1] != "MIG-0" || devs[2] != "MIG-1" || devs[3] != gpu1UUID(lib, 2) {
		t.Errorf("devices %v", devs)
	}
}

func gpu1UUID(lib *dgxa100.Server, i int) string { return lib.Devices[i].(*dgxa100.Device).UUID }

// script is a GPU whose samples the test hands out one call at a time.
type script struct {
	mu       sync.Mutex
	procs    []func(lastSeen uint64) ([]nvml.ProcessUtilizationSample, nvml.Return)
	util     []nvml.Return // with utilValues
	utilVals []uint32
	energy   []uint64 // 0 for an error
	seen     []uint64 // the lastSeen of each GetProcessUtilization
}

func (s *script) device(t *testing.T) *dgxa100.Device {
	dev := dgxa100.NewDevice(0)
	dev.GetProcessUtilizationFunc = func(lastSeen uint64) ([]nvml.ProcessUtilizationSample, nvml.Return) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.seen = append(s.seen, lastSeen)
		if len(s.procs) == 0 {
			t.Error("an unscripted GetProcessUtilization")
			return nil, nvml.ERROR_UNKNOWN
		}
		f := s.procs[0]
		s.procs = s.procs[1:]
		return f(lastSeen)
	}
	dev.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if len(s.util) == 0 {
			t.Error("an unscripted GetUtilizationRates")
			return nvml.Utilization{}, nvml.ERROR_UNKNOWN
		}
		r, v := s.util[0], s.utilVals[0]
		s.util, s.utilVals = s.util[1:], s.utilVals[1:]
		return nvml.Utilization{Gpu: v}, r
	}
	dev.GetTotalEnergyConsumptionFunc = func() (uint64, nvml.Return) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if len(s.energy) == 0 {
			return 0, nvml.ERROR_NOT_SUPPORTED
		}
		e := s.energy[0]
		s.energy = s.energy[1:]
		if e == 0 {
			return 0, nvml.ERROR_UNKNOWN
		}
		return e, nvml.SUCCESS
	}
	return dev
}

// oneGPU is a Meter on one scripted device, opened on a mock server.
func oneGPU(t *testing.T, dev *dgxa100.Device, cfg Config) *Meter {
	lib := dgxa100.New()
	lib.Devices = [8]nvml.Device{dev}
	lib.DeviceGetCountFunc = func() (int, nvml.Return) { return 1, nvml.SUCCESS }
	cfg.Logger = quiet()
	m, err := Open(lib, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

func samples(s ...nvml.ProcessUtilizationSample) func(uint64) ([]nvml.ProcessUtilizationSample, nvml.Return) {
	return func(uint64) ([]nvml.ProcessUtilizationSample, nvml.Return) { return s, nvml.SUCCESS }
}

func fails(r nvml.Return) func(uint64) ([]nvml.ProcessUtilizationSample, nvml.Return) {
	return func(uint64) ([]nvml.ProcessUtilizationSample, nvml.Return) { return nil, r }
}

func check(t *testing.T, g *gauge, step string, wantU, wantE string) {
	t.Helper()
	u, e := g.Read()
	if !u.Equal(dectest.D(wantU)) || !e.Equal(dectest.D(wantE)) {
		t.Errorf("%s: U = %s, energy = %s J; want %s, %s", step, u, e, wantU, wantE)
	}
}

// TestProcessUtilization integrates scripted per-process samples and
// energy readings; the comments give the hand computation.
func TestProcessUtilization(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	us := func(d time.Duration) uint64 { return uint64(t0.Add(d).UnixMicro()) }
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	const ms = time.Millisecond
	alive := map[int]bool{100: true, 101: true, 102: true} // the job's; 200 and 300 are not
	owns := func(pid int) bool { return alive[pid] }
	sample := func(pid uint32, ts uint64, sm uint32) nvml.ProcessUtilizationSample {
		return nvml.ProcessUtilizationSample{Pid: pid, TimeStamp: ts, SmUtil: sm}
	}
	s := &script{
		procs: []func(uint64) ([]nvml.ProcessUtilizationSample, nvml.Return){
			// 1s: instants 0.2s (job 40) and 0.7s (job 30+50): mean 60% → U 0.6.
			samples(sample(100, us(200*ms), 40), sample(200, us(200*ms), 30),
				sample(100, us(700*ms), 30), sample(101, us(700*ms), 50), sample(200, us(700*ms), 90)),
			// 2s: no samples since 0.7s: idle → U 0.6.
			fails(nvml.ERROR_NOT_FOUND),
			// 3s: the call fails: its second goes to the next sample.
			fails(nvml.ERROR_UNKNOWN),
			// 4s: over 2s..4s, instants 2.5s (100) and 3.5s (70+60, capped
			// at 100), and a stale 0.7s sample dropped: 100% × 2s → U 2.6.
			samples(sample(101, us(2500*ms), 100), sample(100, us(3500*ms), 70),
				sample(101, us(3500*ms), 60), sample(100, us(700*ms), 99)),
			// 5s: pid 102 is new and alive; 100 has exited but counted
			// already; 300 was never seen alive. Instants 4.5s (102: 50)
			// and 4.8s (100: 20, 300: 50): mean 35% → U 2.95.
			func(uint64) ([]nvml.ProcessUtilizationSample, nvml.Return) {
				delete(alive, 100)
				return []nvml.ProcessUtilizationSample{sample(102, us(4500*ms), 50), sample(300, us(4500*ms), 50),
					sample(100, us(4800*ms), 20), sample(300, us(4800*ms), 50)}, nvml.SUCCESS
			},
			// 6s (Stop): instant 5.5s, another process only: 0 → U 2.95.
			samples(sample(200, us(5500*ms), 100)),
		},
		// mJ at the baseline and at each sample; 0 fails. 1s: +300 J;
		// 2s: +100; 3s: fails; 4s: +300 since the 2s reading; 5s: the
		// counter restarted: +50; 6s: +100.
		energy: []uint64{1_000_000, 1_300_000, 1_400_000, 0, 1_700_000, 50_000, 150_000},
	}
	m := oneGPU(t, s.device(t), Config{})
	g, err := m.track(m.GPUs(), owns, t0)
	if err != nil {
		t.Fatal(err)
	}
	g.sample(at(time.Second))
	check(t, g, "1s", "0.6", "300")
	g.sample(at(2 * time.Second))
	check(t, g, "2s", "0.6", "400")
	g.sample(at(3 * time.Second))
	check(t, g, "3s (missed)", "0.6", "400")
	g.sample(at(4 * time.Second))
	check(t, g, "4s", "2.6", "700")
	g.sample(at(5 * time.Second))
	check(t, g, "5s", "2.95", "750")
	g.sample(at(6 * time.Second))
	check(t, g, "6s", "2.95", "850")

	want := []uint64{us(0), us(700 * ms), us(700 * ms), us(700 * ms), us(3500 * ms), us(4800 * ms)}
	if fmt.Sprint(s.seen) != fmt.Sprint(want) {
		t.Errorf("lastSeen passed %v, want %v", s.seen, want)
	}
}

func TestDeviceUtilization(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	s := &script{
		// Not supported per process: the device's figures from then on.
		procs:    []func(uint64) ([]nvml.ProcessUtilizationSample, nvml.Return){fails(nvml.ERROR_NOT_SUPPORTED)},
		util:     []nvml.Return{nvml.SUCCESS, nvml.SUCCESS, nvml.ERROR_UNKNOWN, nvml.SUCCESS},
		utilVals: []uint32{50, 100, 0, 25},
	}
	m := oneGPU(t, s.device(t), Config{})
	g, err := m.track(m.GPUs(), func(int) bool { return true }, t0)
	if err != nil {
		t.Fatal(err)
	}
	// 0.5×1 + 1×1 + (missed) + 0.25×2 = 2.0; no energy counter.
	for i := 1; i <= 4; i++ {
		g.sample(t0.Add(time.Duration(i) * time.Second))
	}
	check(t, g, "4s", "2", "0")
	if n := len(s.seen); n != 1 {
		t.Errorf("GetProcessUtilization called %d times after NOT_SUPPORTED", n)
	}
}

// TestMIGSlicePresence: a slice with no utilisation figures counts busy
// while the job has a process on it, and its energy (the whole device's)
// is not the job's.
func TestMIGSlicePresence(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	lib := dgxa100.New()
	gpu0 := lib.Devices[0].(*dgxa100.Device)
	gpu0.MigMode = nvml.DEVICE_MIG_ENABLE
	gpu0.GetMaxMigDeviceCountFunc = func() (int, nvml.Return) { return 1, nvml.SUCCESS }
	slice := migSlice(0)
	calls := 0
	slice.GetProcessUtilizationFunc = func(uint64) ([]nvml.ProcessUtilizationSample, nvml.Return) {
		return nil, nvml.ERROR_NOT_SUPPORTED
	}
	slice.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) { return nvml.Utilization{}, nvml.ERROR_NOT_SUPPORTED }
	slice.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
		calls++
		if calls == 2 { // the job's process has gone for a second
			return []nvml.ProcessInfo{{Pid: 9}}, nvml.SUCCESS
		}
		return []nvml.ProcessInfo{{Pid: 9}, {Pid: 7}}, nvml.SUCCESS
	}
	gpu0.GetMigDeviceHandleByIndexFunc = func(int) (nvml.Device, nvml.Return) { return slice, nvml.SUCCESS }
	m, err := Open(lib, Config{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	g, err := m.track(m.GPUs()[:1], func(pid int) bool { return pid == 7 }, t0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		g.sample(t0.Add(time.Duration(i) * time.Second))
	}
	check(t, g, "3s", "2", "0")
	if n := len(slice.GetTotalEnergyConsumptionCalls()); n != 0 {
		t.Errorf("a slice's energy read %d times", n)
	}
}

// TestTrack runs the sampling loop on a busy device and stops it.
func TestTrack(t *testing.T) {
	dev := dgxa100.NewDevice(0)
	dev.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) { return nvml.Utilization{Gpu: 100}, nvml.SUCCESS }
	dev.GetTotalEnergyConsumptionFunc = func() (uint64, nvml.Return) { return 5000, nvml.SUCCESS }
	m := oneGPU(t, dev, Config{Interval: 5 * time.Millisecond, Device: true})
	start := time.Now()
	g, err := m.Track(m.GPUs(), func(int) bool { return false })
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	g.Stop()
	elapsed := time.Since(start)
	u, _ := g.Read()
	// A device measured whole is busy all the time: U is the time tracked.
	if u.LessThan(dectest.D("0.04")) || u.GreaterThan(decimal.NewFromFloat(elapsed.Seconds())) {
		t.Errorf("U = %s after %s of a fully busy device", u, elapsed)
	}
	time.Sleep(20 * time.Millisecond)
	if u2, _ := g.Read(); !u2.Equal(u) {
		t.Errorf("U moved after Stop: %s then %s", u, u2)
	}
	g.Stop() // twice is harmless

	if _, err := m.Track([]contract.GPU{{Index: 5}}, nil); bourse.ErrorCode(err) != bourse.EInvalid {
		t.Errorf("Track of an unknown GPU = %v, want invalid", err)
	}
}
