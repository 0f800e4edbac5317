package metrics

import (
	"maps"
	"math"
	"slices"
)

// Quantiles estimates quantiles of a stream of non-negative values in
// constant memory: values fall into buckets 1% wide on a log scale, so a
// quantile is within 1% of the true one however many millions of values
// there are, and the same values give the same answer in any order.
type Quantiles struct {
	zero    int64           // values below the smallest bucket
	buckets map[int32]int64 // by bucket index
	n       int64
}

const (
	quantileFloor = 1e-3 // seconds: anything shorter counts as zero
	bucketGrowth  = 1.01
)

var logGrowth = math.Log(bucketGrowth)

// Add counts one value.
func (q *Quantiles) Add(v float64) {
	q.n++
	if v < quantileFloor || math.IsNaN(v) {
		q.zero++
		return
	}
	if q.buckets == nil {
		q.buckets = map[int32]int64{}
	}
	q.buckets[int32(math.Floor(math.Log(v/quantileFloor)/logGrowth))]++
}

// N is how many values were added.
func (q *Quantiles) N() int64 { return q.n }

// Quantile is the p-quantile (0 < p ≤ 1): the middle of the bucket that
// holds it, 0 if there are no values.
func (q *Quantiles) Quantile(p float64) float64 {
	if q.n == 0 {
		return 0
	}
	rank := int64(math.Ceil(p * float64(q.n)))
	if rank <= q.zero {
		return 0
	}
	seen := q.zero
	for _, k := range slices.Sorted(maps.Keys(q.buckets)) {
		seen += q.buckets[k]
		if seen >= rank {
			lo := quantileFloor * math.Pow(bucketGrowth, float64(k))
			return lo * (1 + bucketGrowth) / 2
		}
	}
	return 0 // not reached: the buckets hold every value above zero
}
