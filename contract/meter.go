package contract

// Meter says how a server measured a contract's use (U and the energy):
// the server reports it when the job starts, and the exchange keeps it on
// the contract, so that the client can see what its charge rests on.
type Meter string

const (
	// MeterNVML: NVML sampled the GPUs, the job's own processes' SM
	// utilisation where the driver reports it, else the devices'.
	MeterNVML Meter = "nvml"
	// MeterFullUse: the server had no GPU meter and its operator chose to
	// charge as if the job kept every GPU busy, U = GPUs × T.
	MeterFullUse Meter = "full_use"
	// MeterSynthetic: no process ran; a synthetic job (demo, simulator,
	// tests) consumed the utilisation profile its terms gave.
	MeterSynthetic Meter = "synthetic"
)
