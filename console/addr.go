package console

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// clientAddr is the address a request comes from: its peer's, or, when
// the peer is a trusted proxy, the last address in X-Forwarded-For that is
// not one (each proxy appends the address it was reached from, so the
// addresses to the left of it are whatever the client chose to send).
func (c *Console) clientAddr(r *http.Request) string {
	peer := peerAddr(r)
	if !c.trusted(peer) {
		return peer.String()
	}
	var hops []string
	for _, h := range r.Header.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(h, ",")...)
	}
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			return peer.String() // a proxy of ours wrote nonsense: the proxy is all we know
		}
		if !c.trusted(a.Unmap()) {
			return a.Unmap().String()
		}
	}
	return peer.String()
}

// peerAddr is the address of the connection's other end.
func peerAddr(r *http.Request) netip.Addr {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, _ := netip.ParseAddr(host)
	return a.Unmap()
}

// trusted reports whether a is one of the proxies the console is behind.
func (c *Console) trusted(a netip.Addr) bool {
	for _, p := range c.cfg.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
