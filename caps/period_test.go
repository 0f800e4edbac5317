package caps_test

import (
	"testing"
	"testing/quick"
	"time"

	"github.com/bourse/bourse/caps"
)

func utc(y int, mo time.Month, d, h, mi, s, ns int) time.Time {
	return time.Date(y, mo, d, h, mi, s, ns, time.UTC)
}

// TestSpan: the period that contains a time, at the edges of hours, days
// and months, in UTC whatever the time's zone.
func TestSpan(t *testing.T) {
	cet := time.FixedZone("CET", 3600)
	for _, c := range []struct {
		name  string
		p     caps.Period
		at    time.Time
		label string
		end   time.Time
	}{
		{"HourLastNanosecond", caps.Hour, utc(2026, 11, 24, 9, 59, 59, 999999999), "2026-11-24T09", utc(2026, 11, 24, 10, 0, 0, 0)},
		{"HourFirstInstant", caps.Hour, utc(2026, 11, 24, 10, 0, 0, 0), "2026-11-24T10", utc(2026, 11, 24, 11, 0, 0, 0)},
		{"HourAcrossMidnight", caps.Hour, utc(2026, 11, 24, 23, 30, 0, 0), "2026-11-24T23", utc(2026, 11, 25, 0, 0, 0, 0)},
		{"HourInAnotherZone", caps.Hour, time.Date(2027, 1, 1, 0, 59, 59, 0, cet), "2026-12-31T23", utc(2027, 1, 1, 0, 0, 0, 0)},
		{"DayLastNanosecond", caps.Day, utc(2026, 11, 24, 23, 59, 59, 999999999), "2026-11-24", utc(2026, 11, 25, 0, 0, 0, 0)},
		{"DayFirstInstant", caps.Day, utc(2026, 11, 25, 0, 0, 0, 0), "2026-11-25", utc(2026, 11, 26, 0, 0, 0, 0)},
		{"DayInAnotherZone", caps.Day, time.Date(2026, 11, 25, 0, 30, 0, 0, cet), "2026-11-24", utc(2026, 11, 25, 0, 0, 0, 0)},
		{"DayEndOfFebruary", caps.Day, utc(2027, 2, 28, 12, 0, 0, 0), "2027-02-28", utc(2027, 3, 1, 0, 0, 0, 0)},
		{"DayLeap", caps.Day, utc(2028, 2, 28, 12, 0, 0, 0), "2028-02-28", utc(2028, 2, 29, 0, 0, 0, 0)},
		{"MonthOf31Days", caps.Month, utc(2026, 1, 31, 23, 59, 59, 999999999), "2026-01", utc(2026, 2, 1, 0, 0, 0, 0)},
		{"MonthOf30Days", caps.Month, utc(2026, 4, 30, 23, 0, 0, 0), "2026-04", utc(2026, 5, 1, 0, 0, 0, 0)},
		{"MonthFebruary", caps.Month, utc(2027, 2, 28, 23, 59, 59, 0), "2027-02", utc(2027, 3, 1, 0, 0, 0, 0)},
		{"MonthLeapFebruary", caps.Month, utc(2028, 2, 29, 0, 0, 0, 0), "2028-02", utc(2028, 3, 1, 0, 0, 0, 0)},
		{"MonthFirstInstant", caps.Month, utc(2026, 3, 1, 0, 0, 0, 0), "2026-03", utc(2026, 4, 1, 0, 0, 0, 0)},
		{"MonthEndOfYear", caps.Month, utc(2026, 12, 31, 23, 59, 59, 0), "2026-12", utc(2027, 1, 1, 0, 0, 0, 0)},
		{"MonthInAnotherZone", caps.Month, time.Date(2027, 1, 1, 0, 30, 0, 0, cet), "2026-12", utc(2027, 1, 1, 0, 0, 0, 0)},
		{"Bucket", caps.Bucketed, utc(2026, 11, 24, 10, 0, 0, 0), "bucket", time.Time{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			label, end := c.p.Span(c.at)
			if label != c.label || !end.Equal(c.end) {
				t.Errorf("%s at %s: %s ending %s, want %s ending %s", c.p, c.at, label, end, c.label, c.end)
			}
		})
	}
}

// The periods tile time: each instant is in one period, which ends after
// it, and the instant its period ends begins the next, with another name.
func TestSpanTiles(t *testing.T) {
	for _, p := range []caps.Period{caps.Hour, caps.Day, caps.Month} {
		tiles := func(sec int64, ns uint32) bool {
			at := time.Unix(sec%(1<<34), int64(ns%1e9)) // years 1970 to about 2514
			label, end := p.Span(at)
			if !end.After(at) {
				return false
			}
			before, endBefore := p.Span(end.Add(-time.Nanosecond))
			next, _ := p.Span(end)
			return before == label && endBefore.Equal(end) && next != label
		}
		if err := quick.Check(tiles, nil); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

func TestPeriodValid(t *testing.T) {
	for p, want := range map[caps.Period]bool{caps.Hour: true, caps.Day: true, caps.Month: true, caps.Bucketed: false, "week": false, "": false} {
		if got := p.Valid(); got != want {
			t.Errorf("%q.Valid() = %v, want %v", p, got, want)
		}
	}
}
