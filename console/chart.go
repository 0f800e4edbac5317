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
// (or the lowest value, if below) to the highest, labelled at both ends.
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
// at both ends, and the time at both ends of the x axis (to the second
// where they are less than an hour apart). Points all at one moment are no
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
	fmt.Fprintf(&b, `<text x="%d" y="%d" class="tick">%s</text>`, padL, h-8, t0.UTC().Format(tick))
	fmt.Fprintf(&b, `<text x="%d" y="%d" class="tick" text-anchor="end">%s</text>`, w-padR, h-8, t1.UTC().Format(tick))
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
