package breakdown

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// A report's prices are one per period, and a market that has traded for
// a day is one period by day: a chart of one point, an axis from a
// moment to itself. The trend is the same average in buckets fine
// enough for a line: the coarsest of a month, a day, 6 hours, an hour,
// 10 minutes and a minute that cuts the span of the contracts into
// trendPoints buckets or more; a minute if none does.

// trendPoints is how many buckets a trend aims at.
const trendPoints = 12

// TrendPoint is the average charge of a GPU-second over the bucket that
// starts At.
type TrendPoint struct {
	At           time.Time       `json:"at"`
	Currency     string          `json:"currency"`
	GPUSeconds   decimal.Decimal `json:"gpu_seconds"`
	Cost         decimal.Decimal `json:"cost"`
	PerGPUSecond decimal.Decimal `json:"per_gpu_second"`
}

// Trend is the price of a GPU-second over time: Every names its buckets
// ("month", "day", "6h", "1h", "10m" or "1m"); Points are by currency,
// then time, and leave out buckets without a GPU-second sold.
type Trend struct {
	Every  string       `json:"every,omitempty"`
	Points []TrendPoint `json:"points,omitempty"`
}

// bucket is one rung of the trend's ladder: start is the start of the
// bucket that holds a UTC time, length about how long one is.
type bucket struct {
	name   string
	length time.Duration
	start  func(time.Time) time.Time
}

func truncate(d time.Duration) func(time.Time) time.Time {
	return func(t time.Time) time.Time { return t.Truncate(d) }
}

// ladder is coarsest first; the day and the minute are what a trend
// keeps its sums in.
var ladder = []bucket{
	{"month", 30 * 24 * time.Hour, func(t time.Time) time.Time { return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC) }},
	{"day", 24 * time.Hour, truncate(24 * time.Hour)},
	{"6h", 6 * time.Hour, truncate(6 * time.Hour)},
	{"1h", time.Hour, truncate(time.Hour)},
	{"10m", 10 * time.Minute, truncate(10 * time.Minute)},
	{"1m", time.Minute, truncate(time.Minute)},
}

// trendKey is a bucket of a currency.
type trendKey struct {
	at  time.Time
	cur string
}

type sums struct{ u, cost decimal.Decimal }

// trend adds contracts up by day and by minute. The minutes are kept
// only while the contracts span less than trendPoints days: past that a
// day is fine enough, and the minutes of a long report are not worth
// their memory.
type trend struct {
	first, last time.Time
	n           int
	days        map[trendKey]*sums
	minutes     map[trendKey]*sums
}

func newTrend() *trend {
	return &trend{days: map[trendKey]*sums{}, minutes: map[trendKey]*sums{}}
}

func (t *trend) add(at time.Time, cur string, u, cost decimal.Decimal) {
	at = at.UTC()
	if t.n == 0 || at.Before(t.first) {
		t.first = at
	}
	if t.n == 0 || at.After(t.last) {
		t.last = at
	}
	t.n++
	addTo(t.days, trendKey{ladder[1].start(at), cur}, u, cost)
	if t.last.Sub(t.first) >= trendPoints*ladder[1].length {
		t.minutes = nil
	} else {
		addTo(t.minutes, trendKey{ladder[5].start(at), cur}, u, cost)
	}
}

func addTo(m map[trendKey]*sums, k trendKey, u, cost decimal.Decimal) {
	s := m[k]
	if s == nil {
		s = &sums{}
		m[k] = s
	}
	s.u, s.cost = s.u.Add(u), s.cost.Add(cost)
}

// result rolls the sums up into the chosen buckets.
func (t *trend) result() Trend {
	if t.n == 0 {
		return Trend{}
	}
	span := t.last.Sub(t.first)
	b := ladder[len(ladder)-1]
	for _, rung := range ladder {
		if span >= trendPoints*rung.length {
			b = rung
			break
		}
	}
	from := t.minutes
	if b.length >= ladder[1].length || from == nil {
		from = t.days
	}
	rolled := map[trendKey]*sums{}
	for k, s := range from {
		addTo(rolled, trendKey{b.start(k.at), k.cur}, s.u, s.cost)
	}
	out := Trend{Every: b.name}
	for _, k := range slices.SortedFunc(maps.Keys(rolled), func(x, y trendKey) int {
		return cmp.Or(strings.Compare(x.cur, y.cur), x.at.Compare(y.at))
	}) {
		s := rolled[k]
		if !s.u.IsPositive() {
			continue
		}
		out.Points = append(out.Points, TrendPoint{At: k.at, Currency: k.cur, GPUSeconds: s.u, Cost: s.cost, PerGPUSecond: s.cost.DivRound(s.u, 6)})
	}
	return out
}
