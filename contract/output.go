package contract

// OutputCaps are the bounds a server declared, when it started a job, on
// the output it sends the job's client, in bytes: Log on each of stdout
// and stderr, Results on the results archive. Zero: none declared. The
// exchange keeps them on the contract and relays no byte past them.
type OutputCaps struct {
	Log     int64 `json:"log,omitempty"`
	Results int64 `json:"results,omitempty"`
}
