// Command custom-agent is a bidding agent with a strategy of its own: it
// bids the median price of the counter-offers it has seen, raises it a
// little after each rejection, and takes the cheapest counter-offer within
// its value. Run it against the demo market, whose client ada has a wallet:
//
//	go run ./cmd/bourse demo --duration 2m      # prints the NATS URL
//	go run ./examples/custom-agent -nats nats://127.0.0.1:PORT
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/bidder"
	"github.com/bourse/bourse/bidder/strategy"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// median is the strategy: any type with Bid, Take and Observe plugs in.
type median struct {
	mu   sync.Mutex
	seen []decimal.Decimal // recent counter-offer prices per GPU-second at full use, P and Q
}

func (m *median) Bid(j strategy.Job, rejected int, _ time.Time) contract.Terms {
	m.mu.Lock()
	price := j.Value.Div(decimal.NewFromInt(2)) // until it has seen the market
	if n := len(m.seen); n > 0 {
		s := slices.SortedFunc(slices.Values(m.seen), decimal.Decimal.Cmp)
		price = s[n/2]
	}
	m.mu.Unlock()
	step := j.Value.Mul(decimal.RequireFromString("0.1")).Mul(decimal.NewFromInt(int64(rejected)))
	t := contract.Terms{Currency: j.Currency, GPUs: j.GPUs, Class: j.Class, TimeLimit: 2 * j.Runtime,
		P:   contract.Flat(decimal.Min(j.Value, price.Add(step)).Truncate(6)),
		Job: &contract.JobSpec{Profile: &contract.Profile{Utilization: j.Utilization, Duration: j.Runtime}}}
	t.Prepayment = t.CappedPrepayment(j.Scale) // none named: the maximum charge
	return t
}

func (m *median) Take(j strategy.Job, counters []contract.Counter, now time.Time) *contract.Counter {
	m.mu.Lock()
	for _, k := range counters {
		m.seen = append(m.seen, k.Terms.FullUsePrice().Decimal(6))
	}
	m.seen = m.seen[max(0, len(m.seen)-20):]
	m.mu.Unlock()
	return strategy.Cheapest{}.Take(j, counters, now)
}

func (m *median) Observe(bool, time.Duration) {}

// runJobs runs jobs one after another with the strategy and prints how each fared.
func runJobs(ctx context.Context, url, id string, jobs int, runtime time.Duration, out io.Writer) error {
	c, err := bidder.Dial(bidder.Config{ID: id, URL: url})
	if err != nil {
		return err
	}
	defer c.Close()
	s := &median{}
	for i := range jobs {
		job := strategy.Job{Name: fmt.Sprintf("median-%d-%d", time.Now().UnixNano(), i), Currency: "CRED", Scale: 2,
			GPUs: 1 + i%2, Runtime: runtime, Utilization: decimal.RequireFromString("0.9"), Value: decimal.RequireFromString("0.40")}
		k, err := strategy.Negotiate(ctx, c, strategy.Negotiation{Strategy: s, Job: job, Report: func(r strategy.Round) {
			if r.Reply.Contract == nil {
				fmt.Fprintf(out, "job %d offer %d at %s/GPU-s: no contract, %d counter-offer(s)\n", i+1, r.N+1, r.Terms.P[0].Y, len(r.Reply.Counters))
			}
		}})
		if err != nil {
			fmt.Fprintf(out, "job %d: %v\n", i+1, err)
			continue
		}
		fmt.Fprintf(out, "job %d: contract %s with %s at %s/GPU-s\n", i+1, k.ID, k.Server, k.Terms.P[0].Y)
		events, err := c.Watch(ctx, k.ID)
		if err != nil {
			return err
		}
		for ev := range events {
			if ev.Type == protocol.EventSettled || ev.Type == protocol.EventVoided {
				fmt.Fprintf(out, "job %d: %s (%s), charged %s, refunded %s\n", i+1, ev.Type, ev.Contract.Reason, ev.Contract.Charge, ev.Contract.Refund)
			}
		}
	}
	return nil
}

func main() {
	url := flag.String("nats", "nats://127.0.0.1:4222", "NATS URL of the market (bourse demo prints it)")
	id := flag.String("id", "you", "client name; the demo funds you (100.00 CRED) and trades as no bot there: ada … hal are its bots")
	jobs := flag.Int("jobs", 3, "jobs to run")
	runtime := flag.Duration("runtime", 3*time.Second, "how long each job runs")
	flag.Parse()
	if err := runJobs(context.Background(), *url, *id, *jobs, *runtime, os.Stdout); err != nil {
		log.Fatal(err)
	}
}
