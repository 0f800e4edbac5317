package signing

import "sync/atomic"

// KeyFile is the servers' keys as a file holds them, read again on
// Reload, so that the exchange takes a rotated or revoked server's key
// without a restart. It verifies for exchange.Config.Verifier.
type KeyFile struct {
	path string
	keys atomic.Pointer[Keys]
}

// OpenKeyFile reads the keys file at path.
func OpenKeyFile(path string) (*KeyFile, error) {
	f := &KeyFile{path: path}
	if err := f.Reload(); err != nil {
		return nil, err
	}
	return f, nil
}

// Reload reads the file again. If it cannot be read, or is malformed,
// the keys read before stay.
func (f *KeyFile) Reload() error {
	ks, err := LoadKeys(f.path)
	if err != nil {
		return err
	}
	f.keys.Store(&ks)
	return nil
}

// Len is how many servers have a key.
func (f *KeyFile) Len() int { return len(*f.keys.Load()) }

// Path is the file's.
func (f *KeyFile) Path() string { return f.path }

// Verify checks that sig is server's signature of data, with the keys
// read last.
func (f *KeyFile) Verify(server string, data []byte, sig string) error {
	return f.keys.Load().Verify(server, data, sig)
}
