package natsvc_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/protocol"
)

// BenchmarkStreamSync weighs what JetStream's sync_interval costs the
// usage stream: servers publish readings messages (here of 16 readings,
// about 4 KiB, as a server running 16 contracts sends each interval) to
// a file-backed stream, 64 publishers at once, on nats-server's default
// (the page cache written to disk every 2 minutes) and with every write
// synced (sync_interval: always). An op is one readings message
// acknowledged; ns/op is the stream's throughput, µs/publish each
// publisher's latency. The ratio of the two runs is the cost of
// durability on this machine's disk.
func BenchmarkStreamSync(b *testing.B) {
	body := readingsBody(16)
	for _, always := range []bool{false, true} {
		name := "sync=default"
		if always {
			name = "sync=always"
		}
		b.Run(name, func(b *testing.B) {
			opts := &natsserver.Options{NoLog: true, SyncAlways: always}
			if always {
				opts.SyncInterval = 2 * time.Minute // SyncAlways needs a non-zero interval, as the config parser sets
			}
			ns := natstest.StartWith(b, opts)
			nc := natstest.Connect(b, ns, "")
			js, err := jetstream.New(nc)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: protocol.UsageStream, Subjects: []string{protocol.ReadingsSubjects},
				Storage: jetstream.FileStorage, Retention: jetstream.LimitsPolicy}); err != nil {
				b.Fatal(err)
			}
			const publishers = 64
			b.SetParallelism(max(1, publishers/runtime.GOMAXPROCS(0))) // publishers goroutines in all
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					msg := nats.NewMsg(protocol.ReadingsSubject(fmt.Sprintf("gpu%d", i%publishers)))
					msg.Data = body
					if _, err := js.PublishMsg(ctx, msg); err != nil {
						b.Error(err)
						return
					}
					i++
				}
			})
			b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N)*publishers, "µs/publish")
		})
	}
}

// readingsBody is a readings message of n readings.
func readingsBody(n int) []byte {
	var bodies [][]byte
	var sigs []string
	for i := range n {
		bodies = append(bodies, fmt.Appendf(nil, `{"contract":"c-%020d","seq":600,"u":"1140.5","t":"10m0s","s":"2","energy":"781440","at":"2026-11-21T12:10:00.036Z"}`, i))
		sigs = append(sigs, "f1mQ0c5XyqS8a2cG3nqK3n6hC0lW9y4bH5m4H1v4uQx0qzvUuQ0oYt9cB2gS4bE3n1g7m8oA2pT6yV5dR0kLCg")
	}
	return protocol.AppendReadings(nil, bodies, sigs)
}
