package caps

import "time"

// Period is how long a spend cap's budget lasts.
type Period string

const (
	// Hour caps spending in fixed windows of an hour: across the edge of
	// two hours up to twice the limit can be committed within an hour
	// (a Bucketed budget refills continuously instead).
	Hour  Period = "hour"
	Day   Period = "day"
	Month Period = "month"
	// Bucketed is a token bucket: one budget for good, which the treasury
	// refills at a rate up to a capacity (Bucket); the House reserves
	// from it and never mints into it. Its value is what it was called
	// before ("rate"): it is in budget wallets' ids and stored caps.
	Bucketed Period = "rate"
)

// Valid reports whether p is a period with a limit per period (a bucket
// is set otherwise).
func (p Period) Valid() bool { return p == Hour || p == Day || p == Month }

// Span names the period of p that contains at, in UTC, and says when it
// ends. A bucket's is "bucket", which never ends (a zero end).
func (p Period) Span(at time.Time) (label string, end time.Time) {
	at = at.UTC()
	switch p {
	case Bucketed:
		return "bucket", time.Time{}
	case Hour:
		start := at.Truncate(time.Hour)
		return start.Format("2006-01-02T15"), start.Add(time.Hour)
	case Month:
		start := time.Date(at.Year(), at.Month(), 1, 0, 0, 0, 0, time.UTC)
		return start.Format("2006-01"), start.AddDate(0, 1, 0)
	}
	start := time.Date(at.Year(), at.Month(), at.Day(), 0, 0, 0, 0, time.UTC)
	return start.Format("2006-01-02"), start.AddDate(0, 0, 1)
}
