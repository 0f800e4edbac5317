// Package nvmlmeter measures jobs' GPU use through NVML
// (github.com/NVIDIA/go-nvml): the server.Meter of the process runner.
//
// It takes an nvml.Interface, so that tests run it on go-nvml's mock
// package. Open calls Init and nothing else when Init fails: on a machine
// without the NVIDIA driver the library cannot even be loaded, and every
// other call would fail or crash.
//
// A job's U integrates, GPU by GPU, the SM utilisation of the job's own
// processes (GetProcessUtilization, passing back the last timestamp seen),
// or the device's utilisation where per-process figures are not supported
// or Config.Device asks for them, or, for a MIG slice that reports neither,
// whether the job has a process on it. Each sample covers the time since
// the last good one: a failed sample leaves its time to the next. Energy is
// the rise of GetTotalEnergyConsumption, a counter that restarts from zero
// when the driver reloads.
package nvmlmeter

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/server"
)

// DefaultInterval is how often a job is sampled when Config.Interval is 0.
const DefaultInterval = time.Second

// Config configures a Meter; its zero value works.
type Config struct {
	// Interval is how often each job's GPUs are sampled.
	Interval time.Duration
	// Device measures whole devices' utilisation instead of the job's
	// processes': right where a job's GPUs run nothing else.
	Device bool
	Logger *slog.Logger     // nil: slog.Default()
	Now    func() time.Time // nil: time.Now
}

// ErrNoDriver is what an InitError is when there is no driver to use:
// errors.Is(err, ErrNoDriver).
var ErrNoDriver = errors.New("no NVIDIA driver")

// InitError is a failed nvml.Init.
type InitError struct {
	Return nvml.Return
}

func (e *InitError) Error() string {
	if e.noDriver() {
		return fmt.Sprintf("%v (NVML: %s)", ErrNoDriver, describe(e.Return))
	}
	return "NVML init: " + describe(e.Return)
}

// Is makes errors.Is(err, ErrNoDriver) true where the library or the
// driver is missing.
func (e *InitError) Is(target error) bool { return target == ErrNoDriver && e.noDriver() }

func (e *InitError) noDriver() bool {
	return e.Return == nvml.ERROR_LIBRARY_NOT_FOUND || e.Return == nvml.ERROR_DRIVER_NOT_LOADED
}

// describe words the Returns a person meets at start-up; the rest as NVML
// names them.
func describe(r nvml.Return) string {
	switch r {
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return "library not found"
	case nvml.ERROR_DRIVER_NOT_LOADED:
		return "driver not loaded"
	case nvml.ERROR_NO_PERMISSION:
		return "no permission"
	}
	return r.Error()
}

// Meter is NVML opened, and the GPUs it found. Close it when done.
type Meter struct {
	lib     nvml.Interface
	cfg     Config
	log     *slog.Logger
	gpus    []contract.GPU
	devices map[int]*device // by GPU index
}

var _ server.Meter = (*Meter)(nil)

// device is one GPU the server offers: a whole device or a MIG slice.
type device struct {
	handle nvml.Device
	uuid   string
	mig    bool
}

// Open initialises NVML and discovers the GPUs. A device in MIG mode
// offers each of its slices as a GPU of its own. When Init fails it
// returns an *InitError and has called nothing else.
func Open(lib nvml.Interface, cfg Config) (*Meter, error) {
	if ret := lib.Init(); ret != nvml.SUCCESS {
		return nil, &InitError{Return: ret}
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	m := &Meter{lib: lib, cfg: cfg, log: cfg.Logger, devices: map[int]*device{}}
	if err := m.discover(); err != nil {
		_ = lib.Shutdown()
		return nil, err
	}
	return m, nil
}

// Close shuts NVML down.
func (m *Meter) Close() error {
	if ret := m.lib.Shutdown(); ret != nvml.SUCCESS {
		return fmt.Errorf("NVML shutdown: %s", describe(ret))
	}
	return nil
}

// Kind is contract.MeterNVML.
func (m *Meter) Kind() contract.Meter { return contract.MeterNVML }

// GPUs are the GPUs found, indexed from 0 in NVML's order, a MIG device's
// slices in the place of the device.
func (m *Meter) GPUs() []contract.GPU { return append([]contract.GPU(nil), m.gpus...) }

// Devices maps each GPU's index to the name CUDA_VISIBLE_DEVICES gives it:
// its UUID (GPU-… or MIG-…).
func (m *Meter) Devices() map[int]string {
	out := make(map[int]string, len(m.devices))
	for i, d := range m.devices {
		out[i] = d.uuid
	}
	return out
}

func (m *Meter) discover() error {
	n, ret := m.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nvmlError("DeviceGetCount", ret)
	}
	for i := range n {
		h, ret := m.lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return nvmlError(fmt.Sprintf("DeviceGetHandleByIndex(%d)", i), ret)
		}
		cur, _, ret := h.GetMigMode()
		if ret == nvml.SUCCESS && cur == nvml.DEVICE_MIG_ENABLE {
			if err := m.addSlices(i, h); err != nil {
				return err
			}
			continue
		}
		if err := m.add(h, false); err != nil {
			return fmt.Errorf("GPU %d: %w", i, err)
		}
	}
	if len(m.gpus) == 0 {
		return bourse.Errorf(bourse.EUnavailable, "nvmlmeter.Open", "NVML found no GPUs")
	}
	return nil
}

func (m *Meter) addSlices(i int, h nvml.Device) error {
	k, ret := h.GetMaxMigDeviceCount()
	if ret != nvml.SUCCESS {
		return nvmlError(fmt.Sprintf("GPU %d: GetMaxMigDeviceCount", i), ret)
	}
	for s := range k {
		mh, ret := h.GetMigDeviceHandleByIndex(s)
		if ret == nvml.ERROR_NOT_FOUND || ret == nvml.ERROR_INVALID_ARGUMENT {
			continue // no slice in that place
		}
		if ret != nvml.SUCCESS {
			return nvmlError(fmt.Sprintf("GPU %d: GetMigDeviceHandleByIndex(%d)", i, s), ret)
		}
		if err := m.add(mh, true); err != nil {
			return fmt.Errorf("GPU %d MIG slice %d: %w", i, s, err)
		}
	}
	return nil
}

func (m *Meter) add(h nvml.Device, mig bool) error {
	name, ret := h.GetName()
	if ret != nvml.SUCCESS {
		return nvmlError("GetName", ret)
	}
	mem, ret := h.GetMemoryInfo()
	if ret != nvml.SUCCESS {
		return nvmlError("GetMemoryInfo", ret)
	}
	uuid, ret := h.GetUUID()
	if ret != nvml.SUCCESS {
		return nvmlError("GetUUID", ret)
	}
	idx := len(m.gpus)
	m.gpus = append(m.gpus, contract.GPU{Index: idx, Model: Model(name), MemoryMiB: int(mem.Total >> 20)})
	m.devices[idx] = &device{handle: h, uuid: uuid, mig: mig}
	return nil
}

// Model is the class name of a GPU from NVML's name of it, the first word
// after the vendor, with a MIG profile kept: "NVIDIA H100 80GB HBM3" is
// "H100", "NVIDIA A100-SXM4-40GB MIG 1g.5gb" is "A100 MIG 1g.5gb".
func Model(name string) string {
	name = strings.TrimSpace(name)
	var profile string
	if i := strings.Index(name, " MIG "); i >= 0 {
		name, profile = name[:i], strings.TrimSpace(name[i+len(" MIG "):])
	}
	for _, p := range []string{"Mock ", "NVIDIA ", "Tesla "} {
		name = strings.TrimPrefix(name, p)
	}
	model, _, _ := strings.Cut(name, " ")
	model, _, _ = strings.Cut(model, "-")
	if profile != "" {
		model += " MIG " + profile
	}
	return model
}

func nvmlError(call string, ret nvml.Return) error {
	return &bourse.Error{Code: bourse.EUnavailable, Op: "nvmlmeter", Message: call + ": " + describe(ret)}
}
