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

// Says is what the meter means for a charge, in words for a person: a
// full_use charge is not a measurement, and reads as one nowhere.
func (m Meter) Says() string {
	switch m {
	case MeterNVML:
		return "NVML sampled the GPUs: the charge rests on measured use"
	case MeterFullUse:
		return "no GPU meter: charged as if every GPU were busy the whole time (U = GPUs × T)"
	case MeterSynthetic:
		return "a synthetic job: its use is the profile its terms gave"
	case "":
		return "not said (the server has not started the job, or does not say)"
	}
	return "unknown to this version"
}
