package main

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/scenario"
)

// TestServerHello: a server without a currency sells for CRED at 2
// places, as bid offers in; one whose scale is not the ledger's is
// refused, saying what to set; one that cannot register says who does
// not answer: NATS (at which URL), or the exchange.
func TestServerHello(t *testing.T) {
	declared := "nvml: off\ngpus: [{count: 1, model: H100, memory_mib: 81920}]\nheartbeat: 100ms\n"

	t.Run("DefaultCurrency", func(t *testing.T) {
		b := startBidMarket(t, []scenario.ServerSpec{}...)
		stderr := startServer(t, noNVML, "id: plain\nnats: {url: "+b.m.URL()+"}\n"+declared)
		require.Eventually(t, func() bool { return strings.Contains(stderr.String(), "msg=registered") }, 10*time.Second, 20*time.Millisecond, "%s", stderr)
		assert.Regexp(t, `(?m)^plain +CRED +1 +1 `, b.ok("ada", "servers"))
		k := b.offerJSON("ada", "--server", "plain", "--price", "0.3", "--duration", "100ms", "--time-limit", "10s")
		b.waitState("ada", k.ID, contract.StateSettled)
	})

	t.Run("OtherScale", func(t *testing.T) {
		b := startBidMarket(t, []scenario.ServerSpec{}...)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a server that is not refused runs on
		defer cancel()
		var out, stderr bytes.Buffer
		code := run(ctx, []string{"server", "--id", "zero", "--nats", b.m.URL(), "--scale", "0", "--nvml", "off", "--gpus", "1xH100:81920"}, &out, &stderr)
		errOut := stderr.String()
		assert.Equal(t, exitFailure, code, errOut)
		assert.Contains(t, errOut, "hello refused")
		assert.Contains(t, errOut, "currency CRED has 2 decimal places on this exchange, and this server prices it at 0: set the server's currency.scale to 2 (or --scale 2)")
	})

	t.Run("NATSDown", func(t *testing.T) {
		// The port stays held, by a listener that never speaks NATS: a port
		// closed here could be taken meanwhile by another package's
		// nats-server, with an exchange on it that answers the hello.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		t.Cleanup(func() { _ = ln.Close() })
		url := "nats://" + ln.Addr().String()
		stderr := startServer(t, noNVML, "id: lonely\nnats: {url: "+url+"}\n"+declared)
		require.Eventually(t, func() bool { return strings.Contains(stderr.String(), "hello not answered") }, 30*time.Second, 20*time.Millisecond, "%s", stderr)
		assert.Contains(t, stderr.String(), "NATS at "+url+" does not answer (not connected")
	})

	t.Run("NoExchange", func(t *testing.T) {
		ns := natstest.Start(t)
		stderr := startServer(t, noNVML, "id: lonely\nnats: {url: "+ns.ClientURL()+"}\n"+declared)
		require.Eventually(t, func() bool { return strings.Contains(stderr.String(), "hello not answered") }, 10*time.Second, 20*time.Millisecond)
		assert.Contains(t, stderr.String(), "connected to NATS at "+ns.ClientURL()+", but no exchange listens there")
	})
}
