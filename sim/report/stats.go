package report

import "math"

// spread is a figure over a policy's seeds. The table shows the mean and
// the range rather than a standard deviation: with the handful of seeds a
// run takes, min–max is what was actually seen and assumes no
// distribution.
type spread struct {
	Mean, Min, Max float64
	N              int
}

func spreadOf(xs []float64) spread {
	if len(xs) == 0 {
		return spread{}
	}
	s := spread{Min: math.Inf(1), Max: math.Inf(-1), N: len(xs)}
	var sum float64
	for _, x := range xs {
		sum += x
		s.Min = min(s.Min, x)
		s.Max = max(s.Max, x)
	}
	s.Mean = sum / float64(len(xs))
	return s
}
