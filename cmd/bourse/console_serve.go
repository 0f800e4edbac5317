package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/bourse/bourse/console"
	"github.com/bourse/bourse/console/sqlsessions"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/treasury"
)

type consoleOptions struct {
	listen string
	users  console.Users
	// usersFile, if set, is where users came from: read again on SIGHUP,
	// and written when a user changes her password.
	usersFile string
	secret    []byte
	cert, key string
	// proxies are the TLS-terminating proxies the console is behind.
	proxies []netip.Prefix
	// insecureHTTP serves plain HTTP off loopback, with a warning.
	insecureHTTP bool
	log          *slog.Logger
	// natsURL, if set, is the NATS the Market page follows the market
	// data on, logging in with natsOpts; without it the page has none.
	natsURL  string
	natsOpts []nats.Option
	// ready, if set, gets the address once the console listens.
	ready func(addr string)
	// ln, if set, is the listener listenConsole opened already: the
	// demo opens it before it trades, so that a bad address fails first.
	ln net.Listener
}

// serveConsole serves the console on treasury t and store's contracts
// until ctx ends.
func serveConsole(ctx context.Context, out io.Writer, t *treasury.Treasury, store exchange.Store, o consoleOptions) error {
	if (o.cert == "") != (o.key == "") {
		return usagef("--tls-cert and --tls-key go together")
	}
	sessions, err := sqlsessions.Beside(ctx, store.Ledger())
	if err != nil {
		return err
	}
	var market *console.MarketHistory
	if o.natsURL != "" {
		h, closeNATS, err := followMarket(ctx, o.natsURL, o.natsOpts, o.log)
		if err != nil {
			return err
		}
		defer closeNATS()
		market = h
	}
	c, err := console.New(console.Config{Treasury: t, Contracts: store, Market: market, Users: o.users, UsersFile: o.usersFile, Sessions: sessions,
		Secret: o.secret, Secure: o.cert != "" || len(o.proxies) > 0, TrustedProxies: o.proxies, Logger: o.log})
	if err != nil {
		return err
	}
	if o.usersFile != "" {
		// SIGHUP reads the users file again: a user removed, or whose
		// role or password changed, loses her sessions without a restart.
		stop := onHUP("console users", func() error {
			users, err := console.ReadUsers(o.usersFile)
			if err != nil {
				return err
			}
			return c.SetUsers(users)
		}, o.log)
		defer stop()
	}
	ln := o.ln
	if ln == nil {
		if ln, err = listenConsole(out, o); err != nil {
			return err
		}
	}
	scheme := "http"
	if o.cert != "" {
		scheme = "https"
	}
	fmt.Fprintf(out, "console at %s://%s/\n", scheme, ln.Addr())
	if o.ready != nil {
		o.ready(ln.Addr().String())
	}
	srv := &http.Server{Handler: c, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: time.Minute}
	errc := make(chan error, 1)
	go func() {
		if o.cert != "" {
			errc <- srv.ServeTLS(ln, o.cert, o.key)
		} else {
			errc <- srv.Serve(ln)
		}
	}()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}

// offLoopbackError is listenConsole's refusal of plain HTTP off loopback.
type offLoopbackError struct{ addr net.Addr }

func (e offLoopbackError) Error() string {
	return fmt.Sprintf("the console refuses plain HTTP on %s, off loopback: passwords and session cookies would cross the network in clear. "+
		"Serve TLS (--tls-cert, --tls-key), or stand behind a TLS-terminating proxy (--behind-proxy ADDR), or listen on 127.0.0.1; "+
		"--insecure-http does it anyway (docs/console.md, \"Off loopback\")", e.addr)
}

// listenConsole opens the console's listener, and refuses plain HTTP off
// loopback unless told to serve it anyway.
func listenConsole(out io.Writer, o consoleOptions) (net.Listener, error) {
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return nil, fmt.Errorf("console listener: %w", err)
	}
	if o.cert == "" && len(o.proxies) == 0 && !loopback(ln.Addr()) {
		if !o.insecureHTTP {
			ln.Close()
			return nil, offLoopbackError{ln.Addr()}
		}
		warning := fmt.Sprintf("WARNING: the console serves plain HTTP on %s, off loopback (--insecure-http): anyone on the network can read passwords and session cookies", ln.Addr())
		fmt.Fprintln(out, warning)
		o.log.Warn(warning)
	}
	return ln, nil
}

// loopback reports whether a listens on a loopback address only.
func loopback(a net.Addr) bool {
	ap, err := netip.ParseAddrPort(a.String())
	return err == nil && ap.Addr().IsLoopback()
}

// prefixList is a repeatable flag of addresses or CIDRs.
type prefixList struct{ to *[]netip.Prefix }

func (p prefixList) String() string {
	if p.to == nil {
		return ""
	}
	var s []string
	for _, x := range *p.to {
		s = append(s, x.String())
	}
	return strings.Join(s, ",")
}

func (p prefixList) Set(v string) error {
	for _, f := range strings.Split(v, ",") {
		f = strings.TrimSpace(f)
		if pr, err := netip.ParsePrefix(f); err == nil {
			*p.to = append(*p.to, pr.Masked())
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil {
			return fmt.Errorf("%q: an address (10.0.0.2) or a CIDR (10.0.0.0/24)", f)
		}
		*p.to = append(*p.to, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return nil
}

func (prefixList) Type() string { return "addr" }
