package natsvc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/bourse/bourse/exchange/natsvc"
	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/protocol"
)

// BenchmarkFloodLatency times alice's offers, from the request to the
// contract in hand, first alone and then while mallory floods the
// exchange with 6,000 offers a second (sixty times her rate; held for a
// second each, more than the 4,096 negotiations an instance takes) naming
// a server that never answers, and reports both medians and their ratio
// from the one run. Under the default limits mallory is held to her
// share; with none she takes every slot and alice's offers fail
// (failed/op). An op is one of alice's offers in each phase; she makes
// 50 a second, within her own limits. BOURSE_FLOOD_RATE=0 floods as fast
// as one goroutine can, which on a small machine measures the CPU that
// mallory shares with the exchange in this one process more than the
// exchange.
func BenchmarkFloodLatency(b *testing.B) {
	rate := 6000.0
	if v := os.Getenv("BOURSE_FLOOD_RATE"); v != "" {
		var err error
		if rate, err = strconv.ParseFloat(v, 64); err != nil {
			b.Fatalf("BOURSE_FLOOD_RATE=%q: %v", v, err)
		}
	}
	for _, tc := range []struct {
		name string
		lim  natsvc.Limits
	}{
		{"limits=default", natsvc.Limits{}},
		{"limits=none", natsvc.Limits{Requests: -1, Readings: -1, InFlight: 1 << 20}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			m, _ := limitedMarket(b, 0, tc.lim)
			m.wallet("alice", "1000000000")
			m.wallet("mallory", "1000000000")
			gpu1 := m.scriptedServer("gpu1", 64, accept)
			mute := m.scriptedServer("mute", 64, accept)
			mute.muteOffers.Store(true)
			defer heartbeats(gpu1, mute)()
			alice := m.client("alice")

			var failed int
			phase := func(name string) time.Duration {
				lat := make([]time.Duration, 0, b.N)
				tick := time.NewTicker(20 * time.Millisecond) // 50 a second, within her own rate
				defer tick.Stop()
				for i := range b.N {
					<-tick.C
					began := time.Now()
					r, err := alice.Offer(context.Background(), fmt.Sprintf("%s-%d", name, i), terms("alice"))
					if err != nil || r.Contract == nil {
						failed++
						continue
					}
					lat = append(lat, time.Since(began))
				}
				if len(lat) == 0 {
					return 0
				}
				slices.Sort(lat)
				return lat[len(lat)/2]
			}
			b.ResetTimer()
			alone := phase("alone")

			mal := natstest.Connect(b, m.ns, protocol.InboxPrefix("mallory"))
			sub, err := mal.Subscribe("_INBOX_mallory.flood", func(*nats.Msg) {})
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = sub.Unsubscribe() }()
			flood := terms("mallory")
			flood.Server = "mute"
			var stop atomic.Bool
			done := make(chan struct{})
			go func() {
				defer close(done)
				began := time.Now()
				for i := 0; !stop.Load(); i++ {
					if rate > 0 {
						if ahead := time.Duration(float64(i)/rate*float64(time.Second)) - time.Since(began); ahead > 0 {
							time.Sleep(ahead)
						}
					}
					body, _ := json.Marshal(protocol.OfferRequest{RequestID: fmt.Sprint("flood-", i), Terms: flood})
					_ = mal.PublishRequest(protocol.ClientSubject("mallory", protocol.VerbOffer), "_INBOX_mallory.flood", body)
					if i%64 == 63 {
						_ = mal.Flush() // as fast as NATS takes them, not faster
					}
				}
			}()
			time.Sleep(200 * time.Millisecond) // the flood fills what it can
			flooded := phase("flood")
			stop.Store(true)
			<-done
			b.StopTimer()

			b.ReportMetric(float64(alone.Microseconds()), "p50-alone-µs")
			b.ReportMetric(float64(flooded.Microseconds()), "p50-flood-µs")
			if alone > 0 && flooded > 0 {
				b.ReportMetric(float64(flooded)/float64(alone), "flood/alone")
			}
			b.ReportMetric(float64(failed)/float64(b.N), "failed/op")
		})
	}
}
