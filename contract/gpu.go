package contract

// GPU is one device of a server.
type GPU struct {
	Index     int    `json:"index"`
	Model     string `json:"model"`
	MemoryMiB int    `json:"memory_mib"`
}
