package report

import (
	"fmt"
	"math/rand/v2"

	"github.com/bourse/bourse/sim/metrics"
)

// fixture is a made-up comparison: three policies, the first two with
// three seeds each and the last with one, 50 series points (jobs arrive
// in the first 40) and four clients per run. Figures come from a fixed random stream so that they
// differ between runs without changing between test runs.
func fixture() []metrics.Result {
	rng := rand.New(rand.NewPCG(1, 2))
	policies := []struct {
		name  string
		seeds []uint64
		price float64 // per GPU-second
	}{
		{"posted", []uint64{3, 1, 2}, 0.0008},
		{"auction", []uint64{1, 2, 3}, 0.0011},
		{"reserve", []uint64{7}, 0.0006},
	}
	var rs []metrics.Result
	for _, p := range policies {
		for _, seed := range p.seeds {
			s := metrics.Summary{
				Jobs:           1000 + rng.IntN(50),
				Completed:      900 + rng.IntN(50),
				Rejected:       20 + rng.IntN(10),
				Preempted:      rng.IntN(15),
				DeadlineMisses: rng.IntN(30),
				Contracts:      950 + rng.IntN(40),
				Revenue:        12000 + 3000*rng.Float64(),
				Utilization:    0.6 + 0.3*rng.Float64(),
				WaitP50:        30 + 120*rng.Float64(),
				WaitP99:        3600 + 7200*rng.Float64(),
				JCTP50:         1800 + 600*rng.Float64(),
				JCTP99:         20000 + 40000*rng.Float64(),
				Surplus:        5000 + 1000*rng.Float64(),
				PriceIndex:     p.price * (0.9 + 0.2*rng.Float64()),
				JainGPU:        0.5 + 0.5*rng.Float64(),
				JainFunding:    0.5 + 0.5*rng.Float64(),
				RhoP50:         1 + rng.Float64(),
				RhoP99:         3 + 5*rng.Float64(),
				Wall:           rng.Float64(), // not deterministic in real runs
			}
			s.Welfare = s.Surplus + s.Revenue
			r := metrics.Result{Scenario: "spot-burst", Policy: p.name, Seed: seed, Summary: s}
			for c := range 4 {
				r.Clients = append(r.Clients, metrics.Client{
					ID:         fmt.Sprintf("client-%d", c),
					Funding:    float64(1000 * (c + 1)),
					Jobs:       250,
					Completed:  200 + rng.IntN(50),
					GPUSeconds: float64(c+1)*1e5 + 5e4*rng.Float64(),
					Paid:       1000 * rng.Float64(),
					Surplus:    500 * rng.Float64(),
				})
			}
			for i := range 50 {
				r.Series = append(r.Series, metrics.Point{
					Hours:       0.5 * float64(i),
					Price:       p.price * (0.8 + 0.4*rng.Float64()),
					Utilization: rng.Float64(),
					Running:     rng.IntN(64),
					Queued:      rng.IntN(200),
					Arrivals:    arrivals(i),
				})
			}
			rs = append(rs, r)
		}
	}
	return rs
}

// arrivals is how many jobs arrive in the fixture's i-th interval: three
// in each of the first 40 half-hours, none after.
func arrivals(i int) int {
	if i < 40 {
		return 3
	}
	return 0
}
