package console

import (
	"fmt"
	"html/template"
	"math"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/protocol"
)

// depthChart draws both sides of a model's book (protocol.Book) as an
// exchange's depth view, w×h pixels: price along the x axis, and up the
// y axis the GPUs to be had at that price or better, summed level by
// level away from the spread, the bids (offers waiting) leftwards from
// the best bid and the asks (servers' GPUs free) rightwards from the best
// ask, in two colours. Along the top, the best of each side, the spread
// and the mid; each level's figures are the title of its step, for a
// pointer to show. Levels are as the exchange publishes them, at most
// protocol.BookLevels a side; prices are written at the currency's
// places, scale (currency.FormatPrice), as the Market page's table has
// them.
func depthChart(title string, b *protocol.Book, scale int32, w, h int) template.HTML {
	price := func(d decimal.Decimal) string { return currency.FormatPrice(d, scale) }
	const padL, padR, padB = 64, 12, 28
	padT := 40
	// The legend beside the title where it fits, else on a row of its
	// own under the best bid's, above the plot.
	asks, bids := "■ asks: GPUs free", "■ bids: GPUs wanted"
	legendY := 16
	if float64(w-padR)-textWidth(asks, legendFont)-textWidth(bids, legendFont)-14 < padL+textWidth(title, titleFont)+8 {
		legendY, padT = 48, 56
	}
	if b == nil || len(b.Asks)+len(b.Bids) == 0 {
		h = 48 // a line to say so
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, `<svg class="chart depth" role="img" aria-label="%s" viewBox="0 0 %d %d" width="%d" height="%d" xmlns="http://www.w3.org/2000/svg">`,
		template.HTMLEscapeString(title), w, h, w, h)
	fmt.Fprintf(&sb, `<text x="%d" y="16" class="title">%s</text>`, padL, template.HTMLEscapeString(title))
	if b == nil || len(b.Asks)+len(b.Bids) == 0 {
		fmt.Fprintf(&sb, `<text x="%d" y="36" class="empty">no server asks with GPUs free, no offer waiting</text></svg>`, padL)
		return template.HTML(sb.String())
	}
	// The price range, padded so that the outermost steps show.
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, l := range append(append([]protocol.Level{}, b.Asks...), b.Bids...) {
		p := l.Price.InexactFloat64()
		lo, hi = math.Min(lo, p), math.Max(hi, p)
	}
	pad := (hi - lo) * 0.12
	if pad == 0 {
		pad = math.Max(hi*0.1, 1e-9)
	}
	lo, hi = math.Max(0, lo-pad), hi+pad
	top := 0
	for _, side := range [][]protocol.Level{b.Asks, b.Bids} {
		n := 0
		for _, l := range side {
			n += l.GPUs
		}
		top = max(top, n)
	}
	if top == 0 {
		top = 1
	}
	x := func(p float64) float64 { return padL + (p-lo)/(hi-lo)*float64(w-padL-padR) }
	y := func(g int) float64 { return float64(h-padB) - float64(g)/float64(top)*float64(h-padT-padB) }
	fmt.Fprintf(&sb, `<line x1="%d" y1="%d" x2="%d" y2="%d" class="axis"/>`, padL, h-padB, w-padR, h-padB)
	fmt.Fprintf(&sb, `<line x1="%d" y1="%d" x2="%d" y2="%d" class="axis"/>`, padL, padT, padL, h-padB)
	fmt.Fprintf(&sb, `<text x="%d" y="%.1f" class="tick" text-anchor="end">%d GPUs</text>`, padL-4, y(top)+4, top)
	fmt.Fprintf(&sb, `<text x="%d" y="%.1f" class="tick" text-anchor="end">0</text>`, padL-4, y(0)+4)
	// Prices are labelled where levels are, in their side's colour: each
	// side's best and outermost, as many as fit apart.
	var labelled []float64
	label := func(p decimal.Decimal, class string) {
		px := x(p.InexactFloat64())
		for _, o := range labelled {
			if math.Abs(o-px) < 56 {
				return
			}
		}
		labelled = append(labelled, px)
		fmt.Fprintf(&sb, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" class="axis"/>`, px, h-padB, px, h-padB+4)
		fmt.Fprintf(&sb, `<text x="%.1f" y="%d" class="tick %s" text-anchor="middle">%s</text>`, px, h-8, class, template.HTMLEscapeString(price(p)))
	}
	for _, side := range []struct {
		levels []protocol.Level
		class  string
	}{{b.Bids, "bids"}, {b.Asks, "asks"}} {
		if n := len(side.levels); n > 0 {
			label(side.levels[0].Price, side.class)
			label(side.levels[n-1].Price, side.class)
		}
	}
	if b.Mid != nil {
		px := x(b.Mid.InexactFloat64())
		fmt.Fprintf(&sb, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" class="mid"><title>mid %s</title></line>`, px, padT, px, h-padB, template.HTMLEscapeString(price(*b.Mid)))
	}
	// The best of each side, the spread and mid, along the top.
	fig := func(d *decimal.Decimal) string {
		if d == nil {
			return "-"
		}
		return price(*d)
	}
	fmt.Fprintf(&sb, `<text x="%d" y="32" class="tick">per GPU-hour: best bid %s · best ask %s · spread %s · mid %s</text>`,
		padL, fig(b.BestBid), fig(b.BestAsk), fig(b.Spread), fig(b.Mid))
	right := float64(w - padR)
	fmt.Fprintf(&sb, `<text x="%.1f" y="%d" class="legend lask" text-anchor="end">%s</text>`, right, legendY, asks)
	fmt.Fprintf(&sb, `<text x="%.1f" y="%d" class="legend lbid" text-anchor="end">%s</text>`, right-textWidth(asks, legendFont)-14, legendY, bids)
	// Each side a staircase from its best level outwards to the edge.
	draw := func(levels []protocol.Level, class, name string, edge float64) {
		if len(levels) == 0 {
			return
		}
		pts := []string{fmt.Sprintf("%.1f,%.1f", x(levels[0].Price.InexactFloat64()), y(0))}
		sum := 0
		var steps []string
		for i, l := range levels {
			px := x(l.Price.InexactFloat64())
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px, y(sum)))
			sum += l.GPUs
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px, y(sum)))
			next := edge
			if i+1 < len(levels) {
				next = x(levels[i+1].Price.InexactFloat64())
			}
			steps = append(steps, fmt.Sprintf(`<line class="step %s" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"><title>%s</title></line>`, class, px, y(sum), next, y(sum),
				template.HTMLEscapeString(fmt.Sprintf("%s at %s: %d GPUs, %d in all to here (%d %s)", name, price(l.Price), l.GPUs, sum, l.Orders, orders(name, l.Orders)))))
		}
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", edge, y(sum)), fmt.Sprintf("%.1f,%.1f", edge, y(0)))
		fmt.Fprintf(&sb, `<polygon class="%s" points="%s"><title>%s</title></polygon>`, class, strings.Join(pts, " "), template.HTMLEscapeString(name))
		sb.WriteString(strings.Join(steps, ""))
	}
	draw(b.Bids, "bids", "bids", float64(padL))
	draw(b.Asks, "asks", "asks", float64(w-padR))
	sb.WriteString(`</svg>`)
	return template.HTML(sb.String())
}

// orders names what n orders of a side are.
func orders(side string, n int) string {
	switch {
	case side == "asks" && n == 1:
		return "ask"
	case side == "asks":
		return "asks"
	case n == 1:
		return "offer"
	}
	return "offers"
}
