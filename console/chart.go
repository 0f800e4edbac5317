package console

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"
)

// A chart is drawn on the server as inline SVG: no script, no library,
// nothing fetched, so the console works offline and under a strict
// content security policy.

// series is one line of a chart: values at times.
type series struct {
	Name string
	At   []time.Time
	Y    []float64
}

// lineChart draws series over time, w×h pixels, with the y axis from zero
// (or the lowest value, if below) to the highest (bandChart).
func lineChart(title string, ss []series, w, h int) template.HTML {
	return lineChartOr(title, "nothing yet", ss, w, h)
}

// lineChartOr is lineChart, saying empty where there is nothing to draw.
func lineChartOr(title, empty string, ss []series, w, h int) template.HTML {
	return bandChart(title, empty, nil, ss, w, h)
}

// band is a range over time, drawn as a shaded area from Lo to Hi: the
// low and high prices of a market, say, behind its median.
type band struct {
	Name   string
	At     []time.Time
	Lo, Hi []float64
}

// bandChart draws bands behind series over time, w×h pixels, with the y
// axis from zero (or the lowest value, if below) to the highest, labelled
// at both ends and halfway, and the time at both ends of the x axis (to
// the second where they are less than an hour apart) and at round times
// between them, as many as fit. Points all at one moment are no
// line either (an axis from a time to itself, a line of one point): it
// says so, with their values.
func bandChart(title, empty string, bs []band, ss []series, w, h int) template.HTML {
	const padL, padR, padB = 64, 12, 28
	padT := 24
	var t0, t1 time.Time
	lo, hi := 0.0, 0.0
	n := 0
	extend := func(at time.Time, ys ...float64) {
		if n == 0 || at.Before(t0) {
			t0 = at
		}
		if n == 0 || at.After(t1) {
			t1 = at
		}
		for _, y := range ys {
			lo, hi = math.Min(lo, y), math.Max(hi, y)
		}
		n++
	}
	whole := true // every value a whole number: counts, labelled as such
	for _, b := range bs {
		for i, at := range b.At {
			extend(at, b.Lo[i], b.Hi[i])
			whole = whole && isWhole(b.Lo[i]) && isWhole(b.Hi[i])
		}
	}
	for _, s := range ss {
		for i, at := range s.At {
			extend(at, s.Y[i])
			whole = whole && isWhole(s.Y[i])
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" role="img" aria-label="%s" viewBox="0 0 %d %d" width="%d" height="%d" xmlns="http://www.w3.org/2000/svg">`,
		template.HTMLEscapeString(title), w, h, w, h)
	fmt.Fprintf(&b, `<text x="%d" y="16" class="title">%s</text>`, padL, template.HTMLEscapeString(title))
	if n == 0 {
		fmt.Fprintf(&b, `<text x="%d" y="%d" class="empty">%s</text></svg>`, padL, h/2, template.HTMLEscapeString(empty))
		return template.HTML(b.String())
	}
	if t1.Equal(t0) {
		var vals []string
		for _, bd := range bs {
			for i := range bd.Lo {
				vals = append(vals, bd.Name+" "+strconv.FormatFloat(bd.Lo[i], 'g', 4, 64)+"–"+strconv.FormatFloat(bd.Hi[i], 'g', 4, 64))
			}
		}
		for _, s := range ss {
			for _, y := range s.Y {
				vals = append(vals, s.Name+" "+strconv.FormatFloat(y, 'g', 4, 64))
			}
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" class="empty">one moment only, no line to draw: %s at %s</text></svg>`,
			padL, h/2, template.HTMLEscapeString(strings.Join(vals, "; ")), t0.UTC().Format("2006-01-02 15:04"))
		return template.HTML(b.String())
	}
	if hi == lo {
		hi = lo + 1
	}
	if whole && math.Mod(hi-lo, 2) != 0 {
		hi++ // so that the middle label is a whole number too
	}
	legend, rows := legendLayout(title, bs, ss, w, padL, padR)
	padT += 16 * rows
	span := t1.Sub(t0).Seconds()
	x := func(at time.Time) float64 { return padL + (at.Sub(t0).Seconds()/span)*float64(w-padL-padR) }
	y := func(v float64) float64 { return float64(h-padB) - (v-lo)/(hi-lo)*float64(h-padT-padB) }
	tick := "01-02 15:04"
	if t1.Sub(t0) < time.Hour {
		tick = "15:04:05"
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" class="axis"/>`, padL, h-padB, w-padR, h-padB)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" class="axis"/>`, padL, padT, padL, h-padB)
	label := axisFormat(lo, hi, whole)
	fmt.Fprintf(&b, `<text x="%d" y="%.1f" class="tick" text-anchor="end">%s</text>`, padL-4, y(hi)+4, label(hi))
	fmt.Fprintf(&b, `<text x="%d" y="%.1f" class="tick" text-anchor="end">%s</text>`, padL-4, y(lo)+4, label(lo))
	fmt.Fprintf(&b, `<text x="%d" y="%.1f" class="tick" text-anchor="end">%s</text>`, padL-4, y((hi+lo)/2)+4, label((hi+lo)/2))
	first, last := t0.UTC().Format(tick), t1.UTC().Format(tick)
	fmt.Fprintf(&b, `<text x="%d" y="%d" class="tick">%s</text>`, padL, h-8, first)
	fmt.Fprintf(&b, `<text x="%d" y="%d" class="tick" text-anchor="end">%s</text>`, w-padR, h-8, last)
	// Times between the ends, at a round step, as many as fit clear of
	// the ends' labels (as wide as their text) and of each other.
	layout := tickLayout(t1.Sub(t0))
	clearFrom, clearTo := float64(padL)+textWidth(first, tickFont)+8, float64(w-padR)-textWidth(last, tickFont)-8
	for _, at := range timeTicks(t0, t1, (w-padL-padR)/tickWidth) {
		px, text := x(at), at.UTC().Format(layout)
		half := textWidth(text, tickFont) / 2
		if px-half < clearFrom || px+half > clearTo {
			continue // would overlap an end's label, or the last tick's
		}
		clearFrom = px + half + 8
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" class="axis"/>`, px, h-padB, px, h-padB+4)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" class="tick" text-anchor="middle">%s</text>`, px, h-8, text)
	}
	for _, e := range legend {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" class="legend %s">■ %s</text>`, e.x, e.y, e.class, template.HTMLEscapeString(e.name))
	}
	for _, bd := range bs {
		var pts []string
		for i, at := range bd.At { // along the top, and back along the bottom
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(at), y(bd.Hi[i])))
		}
		for i := len(bd.At) - 1; i >= 0; i-- {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(bd.At[i]), y(bd.Lo[i])))
		}
		fmt.Fprintf(&b, `<polygon class="band" points="%s"><title>%s</title></polygon>`, strings.Join(pts, " "), template.HTMLEscapeString(bd.Name))
	}
	for i, s := range ss {
		var pts []string
		for j, at := range s.At {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(at), y(s.Y[j])))
		}
		if len(pts) == 1 { // one point: a dot's worth of line
			pts = append(pts, pts[0])
		}
		fmt.Fprintf(&b, `<polyline class="line s%d" points="%s"><title>%s</title></polyline>`, i%4, strings.Join(pts, " "), template.HTMLEscapeString(s.Name))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// tickWidth is the room a time's label takes on an axis, in pixels.
const tickWidth = 90

// tickSteps are the round steps a time axis is labelled at.
var tickSteps = []time.Duration{
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour,
	24 * time.Hour, 2 * 24 * time.Hour, 7 * 24 * time.Hour, 14 * 24 * time.Hour, 28 * 24 * time.Hour,
}

// timeTicks are the round times strictly between t0 and t1 at the
// smallest step of tickSteps that makes at most max of them (none if
// even the largest makes more).
func timeTicks(t0, t1 time.Time, max int) []time.Time {
	span := t1.Sub(t0)
	for _, step := range tickSteps {
		if max < 1 || span/step > time.Duration(max) {
			continue
		}
		var out []time.Time
		for at := t0.UTC().Truncate(step).Add(step); at.Before(t1); at = at.Add(step) {
			out = append(out, at)
		}
		return out
	}
	return nil
}

// tickLayout is how a time between an axis's ends is written: to the
// second where the axis spans less than an hour, as the ends are; to the
// minute within a day or two; the date alone beyond.
func tickLayout(span time.Duration) string {
	switch {
	case span < time.Hour:
		return "15:04:05"
	case span <= 48*time.Hour:
		return "15:04"
	}
	return "01-02"
}

// bar is a share drawn as a bar, with a mark at warn (0 for none).
func bar(used, total, warn float64) template.HTML {
	share := 0.0
	if total > 0 {
		share = math.Min(1, used/total)
	}
	class := "ok"
	switch {
	case share >= 1:
		class = "full"
	case warn > 0 && share >= warn:
		class = "warn"
	}
	s := fmt.Sprintf(`<svg class="bar" viewBox="0 0 120 12" width="120" height="12" xmlns="http://www.w3.org/2000/svg"><rect class="track" width="120" height="12"/><rect class="%s" width="%.1f" height="12"/>`, class, share*120)
	if warn > 0 {
		s += fmt.Sprintf(`<line class="mark" x1="%.1f" y1="0" x2="%.1f" y2="12"/>`, warn*120, warn*120)
	}
	return template.HTML(s + `</svg>`)
}

// The charts' fonts (style.css), in pixels, and how wide their text runs:
// an estimate on the wide side of the usual sans-serif faces, so that
// labels placed by it do not meet.
const (
	titleFont  = 12
	tickFont   = 11
	legendFont = 11
)

func textWidth(s string, px float64) float64 { return float64(len([]rune(s))) * px * 0.62 }

// legendEntry is one name of a chart's legend, where it is drawn.
type legendEntry struct {
	name, class string
	x           float64
	y           int
}

// legendLayout places the legend of bands bs and lines ss (none for one
// alone): beside the title, right-aligned, where it fits there; else in
// rows of its own under the title, left to right from padL, as many as
// it takes. rows is how many rows under the title it took, which the
// plot must leave room for.
func legendLayout(title string, bs []band, ss []series, w, padL, padR int) (out []legendEntry, rows int) {
	for _, bd := range bs {
		out = append(out, legendEntry{name: bd.Name, class: "lband"})
	}
	for i, s := range ss {
		out = append(out, legendEntry{name: s.Name, class: fmt.Sprintf("l%d", i%4)})
	}
	if len(out) < 2 {
		return nil, 0
	}
	const gap = 14.0
	width := func(e legendEntry) float64 { return textWidth("■ "+e.name, legendFont) }
	total := -gap
	for _, e := range out {
		total += width(e) + gap
	}
	if left := float64(w-padR) - total; left >= float64(padL)+textWidth(title, titleFont)+gap {
		for i := range out {
			out[i].x, out[i].y = left, 16
			left += width(out[i]) + gap
		}
		return out, 0
	}
	x, rows := float64(padL), 1
	for i := range out {
		if x > float64(padL) && x+width(out[i]) > float64(w-padR) {
			x, rows = float64(padL), rows+1
		}
		out[i].x, out[i].y = x, 16+16*rows
		x += width(out[i]) + gap
	}
	return out, rows
}

func isWhole(v float64) bool { return v == math.Trunc(v) }

// axisFormat writes a y axis's labels alike, with one number of places
// for all (560 beside 0, not beside 0.00): whole numbers for counts and
// for figures of 100 or more, thousands and millions shortened, two
// significant digits of the largest below.
func axisFormat(lo, hi float64, whole bool) func(float64) string {
	a := math.Max(math.Abs(lo), math.Abs(hi))
	switch {
	case a >= 1e6:
		return func(v float64) string { return strconv.FormatFloat(v/1e6, 'f', 1, 64) + "M" }
	case a >= 1e4:
		return func(v float64) string { return strconv.FormatFloat(v/1e3, 'f', 0, 64) + "k" }
	case whole || a >= 100:
		return func(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }
	}
	places := 2
	if a > 0 && a < 0.1 {
		places = int(math.Ceil(-math.Log10(a))) + 1
	}
	return func(v float64) string { return strconv.FormatFloat(v, 'f', places, 64) }
}
