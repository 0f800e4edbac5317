package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// A unit turns a figure into the words a person reads: durations as 1m30s,
// shares as percentages, money with two decimals.
type unit func(float64) string

// count is a number of jobs. A mean over seeds can be fractional, and
// hiding that would make two policies look tied when they are not.
func count(x float64) string {
	if x == math.Trunc(x) {
		return grouped(strconv.FormatFloat(x, 'f', 0, 64))
	}
	return grouped(strconv.FormatFloat(x, 'f', 1, 64))
}

// money has two decimals and thousands separators.
func money(x float64) string {
	return grouped(strconv.FormatFloat(x, 'f', 2, 64))
}

// percent reads a share in [0, 1].
func percent(x float64) string {
	return strconv.FormatFloat(100*x, 'f', 1, 64) + "%"
}

// ratio is for indices in [0, 1] and ρ, where the third decimal matters.
func ratio(x float64) string {
	return strconv.FormatFloat(x, 'f', 3, 64)
}

// perHour reads a price per GPU-second as a price per GPU-hour: per-second
// prices are so small that two decimals would print 0.00.
func perHour(x float64) string {
	return money(3600 * x)
}

// duration reads seconds as the two largest units that matter: 2h, 1m30s,
// 45s, 1.5s, 350ms. Simulated waits span milliseconds to days, so a
// fixed unit would either be unreadable or round to zero.
func duration(s float64) string {
	switch {
	case math.IsNaN(s) || math.IsInf(s, 0):
		return strconv.FormatFloat(s, 'f', -1, 64)
	case s < 0:
		return "-" + duration(-s)
	case s == 0:
		return "0s"
	case s < 1:
		return strconv.FormatFloat(1000*s, 'f', 0, 64) + "ms"
	case s < 10:
		return strings.TrimSuffix(strconv.FormatFloat(s, 'f', 1, 64), ".0") + "s"
	}
	n := int64(math.Round(s))
	units := []struct {
		name string
		size int64
	}{{"d", 86400}, {"h", 3600}, {"m", 60}, {"s", 1}}
	for i, u := range units[:len(units)-1] {
		if n < u.size {
			continue
		}
		// Round to the next unit down, then drop it when it is zero.
		next := units[i+1]
		n = (n + next.size/2) / next.size * next.size
		big, small := n/u.size, n%u.size/next.size
		if small == 0 {
			return fmt.Sprintf("%d%s", big, u.name)
		}
		return fmt.Sprintf("%d%s%d%s", big, u.name, small, next.name)
	}
	return fmt.Sprintf("%ds", n)
}

// grouped puts thousands separators into a formatted decimal number.
func grouped(s string) string {
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	whole, frac, hasFrac := strings.Cut(s, ".")
	if len(whole) <= 3 || strings.ContainsAny(whole, "eEnN") {
		return sign + s
	}
	var b strings.Builder
	for i, c := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if hasFrac {
		b.WriteString("." + frac)
	}
	return sign + b.String()
}
