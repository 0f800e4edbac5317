package contract

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Fits reports whether a GPU of the given model and memory satisfies the
// class. Models compare without case, since "h100" and "H100" name the same
// card; the exchange's routing and every server's admission use this one
// rule, so that an offer is never routed where it cannot fit nor kept from
// where it can.
func (c Class) Fits(model string, memoryMiB int) bool {
	return (c.Model == "" || strings.EqualFold(c.Model, model)) && memoryMiB >= c.MinMemoryMiB
}

// FoldModel is a GPU model as models compare (Fits): "h100" and "H100"
// are one model, in routing, in market data's lines and in a server's
// count of its models. Two models fold alike exactly where Fits says they
// are one (strings.EqualFold): each letter folds to one of the letters
// that compare equal to it, the same for all of them.
func FoldModel(m string) string {
	ascii := true
	for i := 0; i < len(m) && ascii; i++ {
		ascii = m[i] < utf8.RuneSelf
	}
	if ascii {
		return strings.ToLower(m)
	}
	return strings.Map(func(r rune) rune {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		return unicode.ToLower(least)
	}, m)
}

// Count is how many of gpus fit the class.
func (c Class) Count(gpus []GPU) int {
	n := 0
	for _, g := range gpus {
		if c.Fits(g.Model, g.MemoryMiB) {
			n++
		}
	}
	return n
}

// FitIn reports whether gpus hold as many GPUs of the terms' class as
// they ask for.
func (t Terms) FitIn(gpus []GPU) bool { return t.Class.Count(gpus) >= t.GPUs }

// ModelSold is the GPU model a contract sold: the one its server said at
// the start (sold), else the one its class asked for, else "any" (a
// contract for any model, not started): reports and lists by model count
// what was sold, not what was asked.
func ModelSold(sold string, asked Class) string {
	switch {
	case sold != "":
		return sold
	case asked.Model != "":
		return asked.Model
	}
	return "any"
}
