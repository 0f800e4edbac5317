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
	const padL, padR, padT, padB = 64, 12, 24, 28
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
	for _, b := range bs {
		for i, at := range b.At {
			extend(at, b.Lo[i], b.Hi[i])
		}
	}
	for _, s := range ss {
		for i, at := range s.At {
			extend(at, s.Y[i])
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
	span := t1.Sub(t0).Seconds()
	x := func(at time.Time) float64 { return padL + (at.Sub(t0).Seconds()/span)*float64(w-padL-padR) }
	y := func(v float64) float64 { return float64(h-padB) - (v-lo)/(hi-lo)*float64(h-padT-padB) }
	tick := "01-02 15:04"
	if t1.Sub(t0) < time.Hour {
		tick = "15:04:05"
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" class="axis"/>`, padL, h-padB, w-padR, h-padB)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" class="axis"/>`, padL, padT, padL, h-padB)
	fmt.Fprintf(&b, `<text x="%d" y="%.1f" class="tick" text-anchor="end">%s</text>`, padL-4, y(hi)+4, short(hi))
	fmt.Fprintf(&b, `<text x="%d" y="%.1f" class="tick" text-anchor="end">%s</text>`, padL-4, y(lo)+4, short(lo))
	fmt.Fprintf(&b, `<text x="%d" y="%.1f" class="tick" text-anchor="end">%s</text>`, padL-4, y((hi+lo)/2)+4, short((hi+lo)/2))
	fmt.Fprintf(&b, `<text x="%d" y="%d" class="tick">%s</text>`, padL, h-8, t0.UTC().Format(tick))
	fmt.Fprintf(&b, `<text x="%d" y="%d" class="tick" text-anchor="end">%s</text>`, w-padR, h-8, t1.UTC().Format(tick))
	// Times between the ends, at a round step, as many as fit.
	for _, at := range timeTicks(t0, t1, (w-padL-padR)/tickWidth) {
		px := x(at)
		if px-float64(padL) < tickWidth*0.75 || float64(w-padR)-px < tickWidth*0.75 {
			continue // too near an end's label
		}
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" class="axis"/>`, px, h-padB, px, h-padB+4)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" class="tick" text-anchor="middle">%s</text>`, px, h-8, at.UTC().Format(tickLayout(t1.Sub(t0))))
	}
	// A legend, right to left along the top: the bands', then the lines'.
	type entry struct{ name, class string }
	var legend []entry
	for _, bd := range bs {
		legend = append(legend, entry{bd.Name, "lband"})
	}
	for i, s := range ss {
		legend = append(legend, entry{s.Name, fmt.Sprintf("l%d", i%4)})
	}
	if len(legend) > 1 {
		right := w - padR
		for i := len(legend) - 1; i >= 0; i-- {
			fmt.Fprintf(&b, `<text x="%d" y="16" class="legend %s" text-anchor="end">■ %s</text>`, right, legend[i].class, template.HTMLEscapeString(legend[i].name))
			right -= 14 + 7*len([]rune(legend[i].name))
		}
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

func short(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case a >= 1e4:
		return fmt.Sprintf("%.0fk", v/1e3)
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a > 0 && a < 0.1: // a price of a GPU-second: its first figures
		return strconv.FormatFloat(v, 'g', 2, 64)
	}
	return fmt.Sprintf("%.2f", v)
}
