package image

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync/atomic"

	"github.com/bourse/bourse"
	"github.com/docker/cli/cli/config"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
)

// budget is what one image may still read from registries, counted as the
// bytes arrive: a manifest's sizes are the registry's word, and a registry
// may send more than it said.
type budget struct {
	op       string // the Resolve or Pull it counts for
	max      int64
	read     atomic.Int64
	exceeded atomic.Bool
}

func (b *budget) err() error {
	return &bourse.Error{Code: bourse.EInvalidOffer, Op: b.op, Field: "image",
		Message: fmt.Sprintf("the image is larger than this server's limit of %d bytes (compressed)", b.max)}
}

// pullTransport carries one pull's requests: over HTTPS to every registry not
// listed as Insecure (go-containerregistry would speak plain HTTP to
// private and loopback addresses on its own), and within the pull's
// budget.
type pullTransport struct {
	base     http.RoundTripper
	insecure map[string]bool
	budget   *budget
}

func (t *pullTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme == "http" && !t.insecure[strings.ToLower(req.URL.Host)] {
		req = req.Clone(req.Context())
		req.URL.Scheme = "https"
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &countedBody{ReadCloser: resp.Body, b: t.budget}
	return resp, nil
}

// countedBody charges what is read of a response to the budget, and fails
// the read that passes it.
type countedBody struct {
	io.ReadCloser
	b *budget
}

func (c *countedBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	if c.b.read.Add(int64(n)) > c.b.max {
		c.b.exceeded.Store(true)
		return n, c.b.err()
	}
	return n, err
}

// keychain finds a registry's credentials: in the operator's file first,
// then where the environment says (authn.DefaultKeychain).
func keychain(file string) authn.Keychain {
	if file == "" {
		return authn.DefaultKeychain
	}
	return authn.NewMultiKeychain(fileKeychain(file), authn.DefaultKeychain)
}

// fileKeychain reads a docker-style config.json at each lookup, so that a
// token rotated in it is used from the next pull on.
type fileKeychain string

func (f fileKeychain) Resolve(target authn.Resource) (authn.Authenticator, error) {
	r, err := os.Open(string(f))
	if err != nil {
		return nil, fmt.Errorf("registry credentials: %w", err)
	}
	defer r.Close()
	cf, err := config.LoadFromReader(r)
	if err != nil {
		return nil, fmt.Errorf("registry credentials %s: %w", string(f), err)
	}
	// Keys as authn.DefaultKeychain tries them: the repository, then its
	// registry, with Docker Hub under its historical key.
	for _, key := range []string{target.String(), target.RegistryStr()} {
		if key == name.DefaultRegistry {
			key = authn.DefaultAuthKey
		}
		ac, err := cf.GetAuthConfig(key)
		if err != nil {
			return nil, fmt.Errorf("registry credentials %s: %w", string(f), err)
		}
		if ac.Username != "" || ac.Password != "" || ac.Auth != "" || ac.IdentityToken != "" || ac.RegistryToken != "" {
			return authn.FromConfig(authn.AuthConfig{Username: ac.Username, Password: ac.Password, Auth: ac.Auth,
				IdentityToken: ac.IdentityToken, RegistryToken: ac.RegistryToken}), nil
		}
	}
	return authn.Anonymous, nil
}
