package workload

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
)

// weighted picks keys in proportion to their weights. Its keys are
// sorted, so that a map's random iteration order never reaches the draw:
// the same weights and seed pick the same keys.
type weighted[K cmp.Ordered] struct {
	keys []K
	cum  []float64 // running sums of the weights; the last is the total
}

func newWeighted[K cmp.Ordered](m map[K]float64) weighted[K] {
	w := weighted[K]{keys: make([]K, 0, len(m))}
	for k := range m {
		w.keys = append(w.keys, k)
	}
	slices.Sort(w.keys)
	sum := 0.0
	for _, k := range w.keys {
		sum += m[k]
		w.cum = append(w.cum, sum)
	}
	return w
}

// pick draws one key. It always takes one number from rng, even with a
// single key, so a stream's draws do not depend on the table's size.
func (w weighted[K]) pick(rng *rand.Rand) K {
	u := rng.Float64() * w.cum[len(w.cum)-1]
	// The first running sum above u: a zero weight never wins.
	i := sort.Search(len(w.cum), func(i int) bool { return w.cum[i] > u })
	if i == len(w.cum) { // u rounded up to the total
		i--
	}
	return w.keys[i]
}

// checkWeights says what is wrong with a weight table, naming the key.
func checkWeights[K cmp.Ordered](m map[K]float64) error {
	sum := 0.0
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys) // the same key named first every time
	for _, k := range keys {
		v := m[k]
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return &FieldError{Path: keyPath(k), Err: fmt.Errorf("weight %v is not a finite number ≥ 0", v)}
		}
		sum += v
	}
	if sum <= 0 {
		return fmt.Errorf("the weights add up to %v, not more than 0", sum)
	}
	return nil
}

// keyPath is a map key as a part of a field path; the empty model, "any",
// shows as "".
func keyPath[K cmp.Ordered](k K) string {
	if s := fmt.Sprint(k); s != "" {
		return s
	}
	return `""`
}
